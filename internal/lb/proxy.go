package lb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mythex/mythex/internal/wire"
)

// Proxy is the data path: an HTTP/1.1 listener that routes each request to a
// target of the group and relays the answer, as an ALB listener forwarding to
// one target group. It is built on fasthttp (see docs/lb.md for what that
// costs). It never retries a failed request, as an ALB does not: a target that
// refuses or resets the connection gives the client a 502, a target that does
// not answer within the idle timeout a 504, both marked with X-Mythex-Lb.
type Proxy struct {
	g       *TargetGroup
	m       *Metrics
	log     *slog.Logger
	timeout time.Duration
	connect time.Duration
	srv     *fasthttp.Server
	port    []byte // X-Forwarded-Port
}

// NewProxy returns a proxy routing to g with settings s, counting into m.
func NewProxy(g *TargetGroup, m *Metrics, s Settings, log *slog.Logger) *Proxy {
	if log == nil {
		log = slog.Default()
	}
	p := &Proxy{g: g, m: m, log: log, timeout: s.IdleTimeout, connect: s.ConnectTimeout}
	p.srv = &fasthttp.Server{
		Handler:                      p.handle,
		ErrorHandler:                 p.serverError,
		NoDefaultServerHeader:        true,
		NoDefaultDate:                true,
		NoDefaultContentType:         true,
		IdleTimeout:                  s.IdleTimeout,
		ReadTimeout:                  s.IdleTimeout,
		WriteTimeout:                 s.IdleTimeout,
		ReadBufferSize:               16 << 10,
		MaxRequestBodySize:           s.MaxBodySize,
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		LazyRequestTime:              true, // the handler keeps its own clock reads
		Logger:                       fasthttpLogger{log},
	}
	return p
}

// Serve serves clients on ln until Shutdown; it returns nil after Shutdown.
func (p *Proxy) Serve(ln net.Listener) error {
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		p.port = strconv.AppendInt(nil, int64(a.Port), 10)
	}
	return p.srv.Serve(ln)
}

// Shutdown stops accepting, lets requests in progress finish until ctx ends,
// and closes idle client connections.
func (p *Proxy) Shutdown(ctx context.Context) error {
	return p.srv.ShutdownWithContext(ctx)
}

var (
	headerXFF    = []byte("X-Forwarded-For")
	headerXFP    = []byte("X-Forwarded-Proto")
	headerXFPo   = []byte("X-Forwarded-Port")
	headerLB     = []byte(wire.HeaderLB)
	headerExpect = []byte("Expect")
	valueHTTP    = []byte("http")
	contentText  = []byte("text/plain; charset=utf-8")
)

// handle proxies one request. Hot path: no lock, no log, no allocation of its
// own.
func (p *Proxy) handle(ctx *fasthttp.RequestCtx) {
	t := p.g.acquire()
	if t == nil {
		p.lbError(ctx, fasthttp.StatusServiceUnavailable, wire.ReasonNoTargets)
		return
	}
	req := &ctx.Request
	if req.Header.ConnectionUpgrade() {
		p.tunnel(ctx, t)
		return
	}
	// Connection is hop-by-hop: the client's Connection: close ends the client
	// connection (the server noted it already), never the pooled backend one.
	req.Header.ResetConnectionClose()
	if req.MayContinue() {
		// The listener already answered 100 Continue and read the body.
		req.Header.DelBytes(headerExpect)
	}
	if len(req.Header.Host()) == 0 {
		req.Header.SetHost(t.address)
	}
	p.forwarded(ctx)
	start := time.Now()
	err := t.client.DoTimeout(req, &ctx.Response, p.timeout)
	took := time.Since(start)
	t.release()
	if err != nil {
		status, reason := classify(err, t.cut.Load())
		p.lbError(ctx, status, reason)
		return
	}
	// The target's Connection: close (a draining app's) ends the backend
	// connection only; the client keeps its connection to the LB.
	ctx.Response.Header.ResetConnectionClose()
	p.m.targetResponse(ctx.Response.StatusCode(), took)
}

// forwarded adds the X-Forwarded-* headers an ALB adds.
func (p *Proxy) forwarded(ctx *fasthttp.RequestCtx) {
	var buf [64]byte
	b := buf[:0]
	if prev := ctx.Request.Header.PeekBytes(headerXFF); len(prev) > 0 {
		b = append(b, prev...)
		b = append(b, ", "...)
	}
	if ip, ok := netip.AddrFromSlice(ctx.RemoteIP()); ok {
		b = ip.Unmap().AppendTo(b)
	}
	ctx.Request.Header.SetBytesKV(headerXFF, b)
	ctx.Request.Header.SetBytesKV(headerXFP, valueHTTP)
	if p.port != nil {
		ctx.Request.Header.SetBytesKV(headerXFPo, p.port)
	}
}

// lbError answers the request itself with status, marked with reason.
func (p *Proxy) lbError(ctx *fasthttp.RequestCtx, status int, reason string) {
	r := &ctx.Response
	r.Reset()
	r.SetStatusCode(status)
	r.Header.SetBytesK(headerLB, reason)
	r.Header.SetContentTypeBytes(contentText)
	r.SetBodyString(statusLine(status))
	p.m.lbResponse(status, reason)
}

func statusLine(status int) string {
	switch status {
	case 400:
		return "400 Bad Request\n"
	case 408:
		return "408 Request Timeout\n"
	case 413:
		return "413 Request Entity Too Large\n"
	case 502:
		return "502 Bad Gateway\n"
	case 503:
		return "503 Service Unavailable\n"
	case 504:
		return "504 Gateway Timeout\n"
	}
	return strconv.Itoa(status) + " " + fasthttp.StatusMessage(status) + "\n"
}

// serverError answers a request the server could not read.
func (p *Proxy) serverError(ctx *fasthttp.RequestCtx, err error) {
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		p.lbError(ctx, fasthttp.StatusRequestEntityTooLarge, wire.ReasonBadRequest)
	case isTimeout(err):
		p.lbError(ctx, fasthttp.StatusRequestTimeout, wire.ReasonBadRequest)
	default:
		p.lbError(ctx, fasthttp.StatusBadRequest, wire.ReasonBadRequest)
	}
}

// classify maps a failed exchange with a target to the status and
// X-Mythex-Lb reason an ALB would give: 502 when the connection could not be
// made, was reset or closed, or the answer was malformed; 504 when the target
// did not connect or answer in time. cut means the deregistration delay cut
// the request off. Pure.
func classify(err error, cut bool) (status int, reason string) {
	var op *net.OpError
	switch {
	case cut:
		return fasthttp.StatusBadGateway, wire.ReasonTargetDeregistered
	case isTimeout(err):
		return fasthttp.StatusGatewayTimeout, wire.ReasonTargetTimeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.As(err, &op) && op.Op == "dial":
		return fasthttp.StatusBadGateway, wire.ReasonTargetRefused
	case errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed), op != nil:
		return fasthttp.StatusBadGateway, wire.ReasonTargetReset
	}
	return fasthttp.StatusBadGateway, wire.ReasonTargetBadResponse
}

func isTimeout(err error) bool {
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// fasthttpLogger sends fasthttp's own messages (broken client connections)
// to slog at debug level: they are per connection, not state changes.
type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug(fmt.Sprintf(format, args...), "component", "lb-listener")
	}
}

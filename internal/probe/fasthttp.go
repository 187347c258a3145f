package probe

import (
	"crypto/tls"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mythex/mythex/internal/wire"
)

// Sizes of the default transport.
const (
	// idleConnTimeout closes connections idle this long: below the idle
	// timeouts of ALB (60 s) and the mythex LB, so the prober itself does not
	// start keep-alive races.
	idleConnTimeout = 30 * time.Second
	// readBufferSize is the buffer a response is read through, which also
	// bounds the size of a response head (fasthttp reads a head whole into
	// it). A larger head is a probe error (ReasonLocal), not a dropped
	// request. One buffer per exchange in flight, taken from a pool.
	readBufferSize = 16 << 10
	// maxBodySize bounds a response body the prober reads (each worker
	// buffers its response's body whole before dropping it): a larger body
	// is a probe error (ReasonLocal), so a target answering with huge bodies
	// cannot make thousands of workers hold gigabytes.
	maxBodySize = 8 << 20
)

// fastTransport is the prober's default transport: one fasthttp.HostClient
// for the target, HTTP/1.1 with keep-alive, shared by all workers, each
// worker with its own request and response reused for every exchange (no
// allocation per request in steady state, where net/http's path made about
// 50, with a context, a timer and an httptrace each).
//
//   - At most maxConns connections, one per request in flight (the prober's
//     MaxInFlight bounds those); a request that finds every connection busy
//     waits for one within its timeout rather than failing.
//   - No retries of a request that was written: a reused connection that
//     dies under a request is observed (ReasonReusedConnDied), as an ALB
//     would answer 502. The one retry allowed is of a request not written at
//     all because its pooled connection was found closed by the peer while
//     idle (errIdleConnClosed), which net/http and an ALB also skip.
//   - Idle connections closed after idleConnTimeout; no proxy from the
//     environment (the target is measured, not a proxy); no compression
//     negotiation and no HTTP/2 (like an ALB's HTTP/1.1 hop to targets);
//     redirects not followed (a 3xx is the application's answer); the
//     URL's path sent as given.
//   - Dial, TLS handshake, send and the whole response bounded by the
//     request's timeout, through socket deadlines (no timer or goroutine per
//     request).
type fastTransport struct {
	hc   *fasthttp.HostClient
	d    *dialer
	tmpl *fasthttp.Request
}

// newFastTransport returns the transport for requests of method to u with
// the given User-Agent.
func newFastTransport(u *url.URL, method, userAgent string, maxConns int, timeout time.Duration) *fastTransport {
	isTLS := u.Scheme == "https"
	d := &dialer{}
	if isTLS {
		d.tls = &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	}
	hc := &fasthttp.HostClient{
		Addr:                      fasthttp.AddMissingPort(u.Host, isTLS),
		IsTLS:                     isTLS,
		DialTimeout:               d.dial,
		MaxConns:                  maxConns,
		MaxConnWaitTimeout:        timeout,
		MaxIdleConnDuration:       idleConnTimeout,
		MaxIdemponentCallAttempts: maxConns + 1, // each retry skips one dead idle connection
		RetryIfErr:                retryIfIdleClosed,
		ReadBufferSize:            readBufferSize,
		MaxResponseBodySize:       maxBodySize,
		DisablePathNormalizing:    true,
		NoDefaultUserAgentHeader:  true,
	}
	tmpl := &fasthttp.Request{}
	tmpl.SetRequestURI(u.String())
	tmpl.URI().DisablePathNormalizing = true
	tmpl.Header.SetMethod(method)
	tmpl.Header.SetUserAgent(userAgent)
	return &fastTransport{hc: hc, d: d, tmpl: tmpl}
}

// retryIfIdleClosed lets fasthttp retry a request only when it was not sent
// because its pooled connection had been closed by the peer while idle.
func retryIfIdleClosed(_ *fasthttp.Request, _ int, err error) (resetTimeout, retry bool) {
	return false, err == errIdleConnClosed
}

func (t *fastTransport) newExchanger() exchanger {
	x := &fastExchanger{hc: t.hc}
	t.tmpl.CopyTo(&x.req)
	return x
}

func (t *fastTransport) dials() int64 { return t.d.opened.Load() }

func (t *fastTransport) closeIdle() { t.hc.CloseIdleConnections() }

// fastExchanger is one worker's reusable request and response.
type fastExchanger struct {
	hc   *fasthttp.HostClient
	req  fasthttp.Request
	resp fasthttp.Response
	strs interner
}

// exchange sends the request and reads the whole response (the body into
// the reusable response buffer, then dropped). Header values come back as
// interned strings, so a steady stream of responses allocates nothing.
func (x *fastExchanger) exchange(timeout time.Duration) (Observation, exchanged) {
	var obs Observation
	var ex exchanged
	err := x.hc.DoTimeout(&x.req, &x.resp, timeout)
	h := &x.resp.Header
	if err != nil {
		c := exchangeConn(x.resp.LocalAddr())
		if c != nil {
			obs.ReusedConn = c.exchanges > 1
			obs.ResponseStarted = c.readNow > 0
		}
		obs.Err = observedErr(err, c)
		// A head that was read sets the body's framing (a length, chunked or
		// to the close); a failure before or within the head resets it to 0.
		if h.ContentLength() == 0 {
			return obs, ex
		}
	}
	obs.Status = x.resp.StatusCode()
	obs.LBMarker = x.strs.of(h.Peek(wire.HeaderLB))
	obs.Server = x.strs.of(h.Server())
	ex.version = x.strs.of(h.Peek(wire.HeaderVersion))
	ex.host = x.strs.of(h.Peek(wire.HeaderHost))
	obs.AppAnswered = ex.version != "" || ex.host != "" || len(h.Peek(wire.HeaderService)) > 0
	return obs, ex
}

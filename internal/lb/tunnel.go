package lb

import (
	"bufio"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// tunnel proxies an HTTP/1.1 Upgrade request (WebSocket and the like), which
// an ALB supports: the request goes to t on a connection of its own; if t
// answers 101 Switching Protocols, the client connection is hijacked and bytes
// are copied both ways until either side closes. Any other answer is relayed
// as a normal response. The request counts as in flight on t for the life of
// the tunnel, so draining waits for it and the deregistration delay cuts it.
func (p *Proxy) tunnel(ctx *fasthttp.RequestCtx, t *Target) {
	conn, err := t.conns.dialer(p.connect)(t.address, p.connect)
	if err != nil {
		t.release()
		status, reason := classify(err, t.cut.Load())
		p.lbError(ctx, status, reason)
		return
	}
	p.forwarded(ctx)
	_ = conn.SetDeadline(time.Now().Add(p.timeout))
	bw := bufio.NewWriter(conn)
	err = ctx.Request.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	br := bufio.NewReader(conn)
	resp := fasthttp.AcquireResponse()
	if err == nil {
		err = resp.Read(br)
	}
	if err != nil {
		conn.Close()
		t.release()
		fasthttp.ReleaseResponse(resp)
		status, reason := classify(err, t.cut.Load())
		p.lbError(ctx, status, reason)
		return
	}
	if resp.StatusCode() != fasthttp.StatusSwitchingProtocols {
		conn.Close()
		t.release()
		resp.CopyTo(&ctx.Response)
		fasthttp.ReleaseResponse(resp)
		p.m.targetResponse(ctx.Response.StatusCode(), 0)
		return
	}
	_ = conn.SetDeadline(time.Time{})
	p.m.targetResponse(fasthttp.StatusSwitchingProtocols, 0)
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(client net.Conn) {
		defer t.release()
		defer conn.Close()
		defer fasthttp.ReleaseResponse(resp)
		cw := bufio.NewWriter(client)
		if err := resp.Header.Write(cw); err != nil || cw.Flush() != nil {
			return
		}
		splice(client, conn, br, p.timeout)
	})
}

// splice copies client→backend and backend (buffered in br)→client until
// either direction ends or no byte moves either way for idle (the ALB idle
// timeout applies to WebSocket connections too), then closes both.
func splice(client, backend net.Conn, br *bufio.Reader, idle time.Duration) {
	var once sync.Once
	var closed atomic.Bool
	closeBoth := func() {
		once.Do(func() {
			closed.Store(true)
			// fasthttp closes the hijacked client connection itself once the
			// handler returns; a past deadline unblocks the copy reading it.
			_ = client.SetDeadline(time.Unix(1, 0))
			client.Close()
			backend.Close()
		})
	}
	var last atomic.Int64 // unix nanos of the last byte moved either way
	last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyIdle(backend, client, client, idle, &last, &closed)
		closeBoth()
	}()
	copyIdle(client, br, backend, idle, &last, &closed)
	closeBoth()
	<-done
}

// copyIdle copies src to dst until an error, until nothing moved either way
// for idle, or until closed is set; conn is src's connection, whose read
// deadline it keeps.
func copyIdle(dst io.Writer, src io.Reader, conn net.Conn, idle time.Duration, last *atomic.Int64, closed *atomic.Bool) {
	buf := make([]byte, 32<<10)
	for !closed.Load() {
		_ = conn.SetReadDeadline(time.Unix(0, last.Load()).Add(idle))
		if closed.Load() {
			return // closeBoth's past deadline may have been overwritten just now
		}
		n, err := src.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if isTimeout(err) && time.Since(time.Unix(0, last.Load())) < idle {
				continue // the other direction moved meanwhile
			}
			return
		}
	}
}

package lb

import (
	"bufio"
	"io"
	"net"
	"sync"
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
		splice(client, conn, br)
	})
}

// splice copies client→backend and backend(buffered in br)→client until
// either direction ends, then closes both.
func splice(client, backend net.Conn, br *bufio.Reader) {
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			// fasthttp closes the hijacked client connection itself once the
			// handler returns; a past deadline unblocks the copy reading it.
			_ = client.SetDeadline(time.Unix(1, 0))
			client.Close()
			backend.Close()
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(backend, client)
		closeBoth()
	}()
	_, _ = io.Copy(client, br)
	closeBoth()
	<-done
}

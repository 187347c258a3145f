package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// errIdleConnClosed is what a probeConn's Write returns, before writing a
// byte, when the peer closed or reset the connection while it sat idle in the
// pool. The request has not been sent, so the client may try it on another
// connection: Go's net/http drops such connections the same way (its
// background read sees the FIN), and so does an ALB. It is the only error the
// prober lets fasthttp retry.
var errIdleConnClosed = errors.New("keep-alive connection closed by the peer while idle")

// dialer opens the prober's connections: TCP, plus a TLS handshake for
// https, each wrapped in a probeConn. It counts the connections it opened.
type dialer struct {
	tls    *tls.Config // nil for http
	opened atomic.Int64
}

// dial opens a connection to addr (host:port) within timeout, handshaking
// TLS when the target is https. Its errors are the net package's
// (*net.OpError, *net.DNSError), which Classify understands.
func (d *dialer) dial(addr string, timeout time.Duration) (net.Conn, error) {
	nd := net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	raw, err := nd.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	pc := &probeConn{Conn: raw}
	if sc, ok := raw.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			pc.raw = rc
			pc.peekFn = pc.peek
		}
	}
	pc.local = connAddr{Addr: raw.LocalAddr(), conn: pc}
	if d.tls == nil {
		d.opened.Add(1)
		return pc, nil
	}
	// The handshake runs here, bounded by the dial's timeout, so the wrapper
	// sits above TLS and sees the HTTP exchanges; fasthttp takes a conn with a
	// Handshake method as TLS already.
	tc := tls.Client(raw, d.tls)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("tls handshake with %s: %w", addr, context.DeadlineExceeded)
		}
		return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
	}
	pc.Conn = tc
	d.opened.Add(1)
	return &tlsProbeConn{probeConn: pc, tc: tc}, nil
}

// probeConn wraps one connection of the prober's pool and notes, for the
// exchange that is using it, what the socket did: fasthttp reports any
// failure on a response's first byte as the server closing the connection,
// and says nothing of whether the connection was fresh. A connection is used
// by one exchange at a time (the pool's lock orders its users), and a failed
// exchange's connection is closed, never pooled again, so the exchange that
// failed can read these fields after the client returns.
type probeConn struct {
	net.Conn
	// local is what LocalAddr returns: fasthttp stores it in the Response,
	// which is how an exchange finds the connection it used.
	local connAddr
	raw   syscall.RawConn // for the idle check; nil when unavailable
	// peekFn is peek as a method value, made once so that the idle check
	// does not allocate.
	peekFn   func(fd uintptr) bool
	peekDead bool // set by peek
	peekBuf  [1]byte

	exchanges int   // exchanges begun on this connection, the current one included
	readNow   int   // response bytes read in the current exchange
	err       error // the first read or write error of the current exchange
}

// connAddr is a probeConn's local address, carrying the connection.
type connAddr struct {
	net.Addr
	conn *probeConn
}

// LocalAddr returns the connection's local address as a *connAddr.
func (c *probeConn) LocalAddr() net.Addr { return &c.local }

// Write begins a new exchange when the previous one has read its response
// (HTTP/1.1 without pipelining: an exchange writes, then reads). On a
// connection that already carried an exchange it first checks that the peer
// has not closed it while it sat idle, and returns errIdleConnClosed, having
// written nothing, if it has.
func (c *probeConn) Write(b []byte) (int, error) {
	if c.exchanges == 0 || c.readNow > 0 {
		if c.exchanges > 0 && c.closedWhileIdle() {
			return 0, errIdleConnClosed
		}
		c.exchanges++
		c.readNow = 0
		c.err = nil
	}
	n, err := c.Conn.Write(b)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// Read reads response bytes, noting how many arrived and the first error.
func (c *probeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.readNow += n
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// closedWhileIdle reports whether the peer has closed or reset the
// connection: a non-blocking peek at the socket sees end-of-file or an error.
// Bytes waiting (a TLS session ticket, an unsolicited response) leave the
// connection to the exchange, which fails on them if they are not HTTP.
func (c *probeConn) closedWhileIdle() bool {
	if c.raw == nil {
		return false
	}
	c.peekDead = false
	if err := c.raw.Read(c.peekFn); err != nil {
		return true
	}
	return c.peekDead
}

// tlsProbeConn is a probeConn over TLS. Its Handshake method (already done
// by dial) tells fasthttp not to wrap it in TLS again.
type tlsProbeConn struct {
	*probeConn
	tc *tls.Conn
}

// Handshake returns the result of the handshake dial made.
func (c *tlsProbeConn) Handshake() error { return c.tc.Handshake() }

// exchangeConn returns the probeConn an exchange used, from the local address
// fasthttp kept in its Response; nil when no connection was obtained.
func exchangeConn(local net.Addr) *probeConn {
	if a, ok := local.(*connAddr); ok {
		return a.conn
	}
	return nil
}

package probe

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/mythex/mythex/internal/wire"
)

// NewTransport returns the HTTP/1.1 transport the prober uses by default,
// tuned for a constant request rate to one host:
//
//   - keep-alives on, with up to maxIdle idle connections kept per host (so a
//     burst does not close connections the next second needs);
//   - idle connections closed after 30 s, below the idle timeouts of ALB (60 s)
//     and the mythex LB, so the prober itself does not start keep-alive races;
//   - no proxy from the environment (the target is measured, not a proxy);
//   - no compression negotiation and no HTTP/2 (like an ALB's HTTP/1.1 hop
//     to targets);
//   - dial and TLS handshake bounded by timeout.
//
// Go's transport retries a request on a new connection when a reused one
// failed before any response byte arrived; the prober observes that through
// httptrace (two GotConn calls for one request) and counts the request as
// reached nothing (ReasonReusedConnDied), so the retry hides nothing.
func NewTransport(maxIdle int, timeout time.Duration) *http.Transport {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		MaxIdleConns:          maxIdle,
		MaxIdleConnsPerHost:   maxIdle,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   timeout,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ExpectContinueTimeout: 0,
	}
}

// attempt follows one request through the transport.
type attempt struct {
	trace httptrace.ClientTrace
	conns atomic.Int32 // connections obtained; > 1 means the transport retried
	fresh atomic.Int32 // connections obtained that were new (not reused)
}

func newAttempt() *attempt {
	a := &attempt{}
	a.trace.GotConn = func(info httptrace.GotConnInfo) {
		a.conns.Add(1)
		if !info.Reused {
			a.fresh.Add(1)
		}
	}
	return a
}

// exchanged is what exchange saw besides the Observation.
type exchanged struct {
	version, host string
	newConns      int // connections dialed for the request
}

// exchange sends tmpl (shallow-copied, never modified) through rt with a
// timeout covering the whole exchange, reads the body to its end and returns
// what was observed. It never returns an error of its own: every failure is
// in Observation.Err.
//
// It calls the RoundTripper directly rather than through an http.Client: a
// RoundTripper never follows redirects (a 3xx is the application's answer),
// keeps no cookies, and the client's per-request header copy for redirects
// is a tenth of the prober's allocations.
func exchange(rt http.RoundTripper, tmpl *http.Request, timeout time.Duration, healthPath bool) (Observation, exchanged) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	a := newAttempt()
	req := tmpl.WithContext(httptrace.WithClientTrace(ctx, &a.trace))
	obs := Observation{HealthPath: healthPath}
	var x exchanged
	resp, err := rt.RoundTrip(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		if cerr := resp.Body.Close(); err == nil {
			err = cerr
		}
		h := resp.Header
		obs.Status = resp.StatusCode
		obs.LBMarker = h.Get(wire.HeaderLB)
		obs.Server = h.Get("Server")
		x.version, x.host = h.Get(wire.HeaderVersion), h.Get(wire.HeaderHost)
		obs.AppAnswered = x.version != "" || x.host != "" || h.Get(wire.HeaderService) != ""
	}
	obs.Err = err
	obs.Retried = a.conns.Load() > 1
	x.newConns = int(a.fresh.Load())
	return obs, x
}

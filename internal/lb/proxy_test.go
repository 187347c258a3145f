package lb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/valyala/fasthttp"

	"github.com/mythex/mythex/internal/wire"
)

// lbEnv is a whole Server on loopback listeners with a fake health checker (every
// target passes unless told otherwise) on a fake clock.
type lbEnv struct {
	t      *testing.T
	srv    *Server
	url    string
	admin  string
	clock  *clockwork.FakeClock
	hc     *fakeChecker
	client *http.Client
}

const testToken = "test-token"

func startLB(t *testing.T, s Settings) *lbEnv {
	t.Helper()
	e := &lbEnv{t: t, clock: clockwork.NewFakeClock(), hc: newFakeChecker()}
	srv, err := New(Options{Settings: s, Token: testToken, Clock: e.clock, Logger: discardLogger(), HealthChecker: e.hc,
		ShutdownTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	aln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.url = "http://" + ln.Addr().String()
	e.admin = "http://" + aln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, aln) }()
	e.client = &http.Client{Timeout: waitFor, Transport: &http.Transport{}}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		e.client.CloseIdleConnections()
	})
	return e
}

// register registers id at addr and waits until it is healthy.
func (e *lbEnv) register(id, addr string) {
	e.t.Helper()
	if _, err := e.srv.Group.Register(id, addr); err != nil {
		e.t.Fatalf("register %s: %v", id, err)
	}
	waitUntil(e.t, id+" healthy", func() bool {
		st, err := e.srv.Group.Target(id)
		return err == nil && st.State == StateHealthy
	})
}

func (e *lbEnv) get(path string) *http.Response {
	e.t.Helper()
	resp, err := e.client.Get(e.url + path)
	if err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
	return resp
}

// body reads and closes resp's body.
func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

// backendAddr starts an httptest server with h and returns its host:port.
func backendAddr(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return strings.TrimPrefix(ts.URL, "http://")
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func wantLBError(t *testing.T, resp *http.Response, status int, reason string) {
	t.Helper()
	b := body(t, resp)
	if resp.StatusCode != status || resp.Header.Get(wire.HeaderLB) != reason {
		t.Fatalf("got %d %s=%q (%q), want %d %s=%q", resp.StatusCode, wire.HeaderLB, resp.Header.Get(wire.HeaderLB), b,
			status, wire.HeaderLB, reason)
	}
}

func TestProxy_RelaysAppResponsesUnmarked(t *testing.T) {
	e := startLB(t, testSettings())
	var gotHost, gotXFF, gotProto atomic.Value
	addr := backendAddr(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHost.Store(r.Host)
		gotXFF.Store(r.Header.Get("X-Forwarded-For"))
		gotProto.Store(r.Header.Get("X-Forwarded-Proto"))
		if r.URL.Path == "/app-502" {
			w.WriteHeader(http.StatusBadGateway) // the app's own 502: not the LB's
			io.WriteString(w, "app says bad gateway")
			return
		}
		w.Header().Set("X-App", "yes")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "hello %s?%s", r.URL.Path, r.URL.RawQuery)
	}))
	e.register("a", addr)

	resp := e.get("/some/path?q=1")
	if b := body(t, resp); resp.StatusCode != http.StatusCreated || b != "hello /some/path?q=1" || resp.Header.Get("X-App") != "yes" {
		t.Fatalf("got %d %q X-App=%q, want the app's 201 relayed", resp.StatusCode, b, resp.Header.Get("X-App"))
	}
	if m := resp.Header.Get(wire.HeaderLB); m != "" {
		t.Fatalf("app response carries %s=%q", wire.HeaderLB, m)
	}
	if gotHost.Load() != strings.TrimPrefix(e.url, "http://") || gotXFF.Load() != "127.0.0.1" || gotProto.Load() != "http" {
		t.Fatalf("backend saw Host=%v X-Forwarded-For=%v X-Forwarded-Proto=%v; want the client's Host, 127.0.0.1, http",
			gotHost.Load(), gotXFF.Load(), gotProto.Load())
	}

	resp = e.get("/app-502")
	if b := body(t, resp); resp.StatusCode != http.StatusBadGateway || b != "app says bad gateway" || resp.Header.Get(wire.HeaderLB) != "" {
		t.Fatalf("app 502: got %d %q %s=%q, want the app's own 502 without the marker", resp.StatusCode, b,
			wire.HeaderLB, resp.Header.Get(wire.HeaderLB))
	}
}

func TestProxy_503WithNoTargets(t *testing.T) {
	e := startLB(t, testSettings())
	wantLBError(t, e.get("/"), http.StatusServiceUnavailable, wire.ReasonNoTargets)

	e.register("a", backendAddr(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	if _, err := e.srv.Group.Deregister("a"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a gone", func() bool { return len(e.srv.Group.Targets()) == 0 })
	wantLBError(t, e.get("/"), http.StatusServiceUnavailable, wire.ReasonNoTargets)
}

func TestProxy_502WhenTargetRefuses(t *testing.T) {
	e := startLB(t, testSettings())
	e.register("a", closedAddr(t)) // the fake checks pass; the real connection is refused
	wantLBError(t, e.get("/"), http.StatusBadGateway, wire.ReasonTargetRefused)
}

func TestProxy_502WhenTargetResetsAndNoRetry(t *testing.T) {
	e := startLB(t, testSettings())
	var hits atomic.Int32
	addr := backendAddr(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.(*net.TCPConn).SetLinger(0) // RST
			conn.Close()
		}
	}))
	e.register("a", addr)
	wantLBError(t, e.get("/"), http.StatusBadGateway, wire.ReasonTargetReset)
	if n := hits.Load(); n != 1 {
		t.Fatalf("the target saw the GET %d times, want once: an ALB does not retry", n)
	}
}

func TestProxy_504WhenTargetTooSlow(t *testing.T) {
	s := testSettings()
	s.IdleTimeout = 300 * time.Millisecond
	e := startLB(t, s)
	release := make(chan struct{})
	defer close(release)
	e.register("a", backendAddr(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})))
	start := time.Now()
	wantLBError(t, e.get("/"), http.StatusGatewayTimeout, wire.ReasonTargetTimeout)
	if took := time.Since(start); took < s.IdleTimeout {
		t.Fatalf("504 after %v, before the idle timeout %v", took, s.IdleTimeout)
	}
}

func TestProxy_RoundRobinDistribution(t *testing.T) {
	e := startLB(t, testSettings())
	var counts [3]atomic.Int32
	for i := range counts {
		e.register(fmt.Sprintf("t%d", i), backendAddr(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { counts[i].Add(1) })))
	}
	for range 30 {
		body(t, e.get("/"))
	}
	for i := range counts {
		if n := counts[i].Load(); n != 10 {
			t.Fatalf("target t%d got %d of 30 requests, want 10 each (round robin)", i, n)
		}
	}
}

func TestProxy_LeastOutstandingRequests(t *testing.T) {
	s := testSettings()
	s.Algorithm = LeastOutstandingRequests
	e := startLB(t, s)
	release := make(chan struct{})
	holding := make(chan struct{}, 1)
	var slowHits, fastHits atomic.Int32
	e.register("slow", backendAddr(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		slowHits.Add(1)
		holding <- struct{}{}
		<-release
	})))
	e.register("fast", backendAddr(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { fastHits.Add(1) })))

	// Park one request on whichever target gets it first until it is "slow".
	held := make(chan *http.Response, 16)
	for slowHits.Load() == 0 {
		go func() {
			resp, err := e.client.Get(e.url + "/")
			if err == nil {
				held <- resp
			}
		}()
		select {
		case <-holding:
		case resp := <-held:
			body(t, resp)
		}
	}
	fastBefore := fastHits.Load()
	for range 10 {
		body(t, e.get("/"))
	}
	if got := fastHits.Load() - fastBefore; got != 10 || slowHits.Load() != 1 {
		t.Fatalf("with one request outstanding on slow: fast got %d of 10, slow %d; want every new request on fast",
			got, slowHits.Load()-1)
	}
	close(release)
	body(t, <-held)
}

func TestProxy_DrainLetsInFlightRequestFinish(t *testing.T) {
	e := startLB(t, testSettings())
	release := make(chan struct{})
	arrived := make(chan struct{})
	e.register("a", backendAddr(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(arrived)
		<-release
		io.WriteString(w, "finished")
	})))
	got := make(chan *http.Response, 1)
	go func() {
		resp, err := e.client.Get(e.url + "/")
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- resp
	}()
	<-arrived
	if st, err := e.srv.Group.Deregister("a"); err != nil || st.InFlight != 1 || st.InRotation {
		t.Fatalf("deregister: %+v, %v; want draining with 1 in flight", st, err)
	}
	wantLBError(t, e.get("/"), http.StatusServiceUnavailable, wire.ReasonNoTargets) // no new request reaches it
	close(release)
	resp := <-got
	if resp == nil {
		t.FailNow()
	}
	if b := body(t, resp); resp.StatusCode != http.StatusOK || b != "finished" {
		t.Fatalf("in-flight request: %d %q, want 200 finished", resp.StatusCode, b)
	}
	waitUntil(t, "a unused and gone", func() bool { _, err := e.srv.Group.Target("a"); return errors.Is(err, ErrTargetNotFound) })
}

func TestProxy_DeregistrationDelayCutsOffInFlightRequest(t *testing.T) {
	s := testSettings()
	e := startLB(t, s)
	arrived := make(chan struct{})
	e.register("a", backendAddr(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done() // a request longer than the delay
	})))
	got := make(chan *http.Response, 1)
	go func() {
		resp, err := e.client.Get(e.url + "/")
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- resp
	}()
	<-arrived
	if _, err := e.srv.Group.Deregister("a"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(s.DeregistrationDelay)
	resp := <-got
	if resp == nil {
		t.FailNow()
	}
	wantLBError(t, resp, http.StatusBadGateway, wire.ReasonTargetDeregistered)
}

// connWatcher is an httptest server whose connections' closes are announced.
func connWatcher(t *testing.T, idle time.Duration) (addr string, closed <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 16)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	ts.Config.IdleTimeout = idle
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			ch <- struct{}{}
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return strings.TrimPrefix(ts.URL, "http://"), ch
}

func TestProxy_KeepAliveRace(t *testing.T) {
	t.Run("backend keep-alive shorter than the LB idle timeout: 502", func(t *testing.T) {
		s := testSettings()
		s.IdleTimeout = time.Minute
		e := startLB(t, s)
		addr, closed := connWatcher(t, 50*time.Millisecond)
		e.register("a", addr)
		if resp := e.get("/"); body(t, resp) != "ok" {
			t.Fatalf("first request: %d", resp.StatusCode)
		}
		<-closed // the backend closed the idle connection the LB still pools
		wantLBError(t, e.get("/"), http.StatusBadGateway, wire.ReasonTargetReset)
	})
	t.Run("backend keep-alive longer than the LB idle timeout: no 502", func(t *testing.T) {
		s := testSettings()
		s.IdleTimeout = 100 * time.Millisecond
		e := startLB(t, s)
		addr, closed := connWatcher(t, time.Minute)
		e.register("a", addr)
		if resp := e.get("/"); body(t, resp) != "ok" {
			t.Fatalf("first request: %d", resp.StatusCode)
		}
		<-closed // the LB closed its idle backend connection first
		if resp := e.get("/"); resp.StatusCode != http.StatusOK || body(t, resp) != "ok" {
			t.Fatalf("second request: %d, want 200", resp.StatusCode)
		}
	})
}

func TestProxy_TargetConnectionCloseStaysOnTheBackendSide(t *testing.T) {
	e := startLB(t, testSettings())
	e.register("a", backendAddr(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close") // a draining app
		io.WriteString(w, "ok")
	})))
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for i := range 2 { // two requests on one client connection
		fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d on the same client connection: %v", i+1, err)
		}
		if b := body(t, resp); resp.StatusCode != 200 || b != "ok" || resp.Close {
			t.Fatalf("request %d: %d %q close=%v, want 200 ok on a kept-alive client connection", i+1, resp.StatusCode, b, resp.Close)
		}
	}
}

func TestProxy_LargeBodies(t *testing.T) {
	e := startLB(t, testSettings())
	e.register("a", backendAddr(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(w, r.Body) })))
	payload := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	resp, err := e.client.Post(e.url+"/echo", "application/octet-stream", strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	if b := body(t, resp); resp.StatusCode != 200 || b != payload {
		t.Fatalf("echo of 1 MiB: %d, %d bytes back", resp.StatusCode, len(b))
	}
}

func TestProxy_ExpectContinue(t *testing.T) {
	e := startLB(t, testSettings())
	var sawExpect atomic.Bool
	e.register("a", backendAddr(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawExpect.Store(r.Header.Get("Expect") != "")
		io.Copy(w, r.Body)
	})))
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(waitFor))
	io.WriteString(conn, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	br := bufio.NewReader(conn)
	interim, err := br.ReadString('\n')
	if err != nil || !strings.Contains(interim, "100") {
		t.Fatalf("interim answer %q, %v; want 100 Continue", interim, err)
	}
	br.ReadString('\n')
	io.WriteString(conn, "hello")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b := body(t, resp); resp.StatusCode != 200 || b != "hello" || sawExpect.Load() {
		t.Fatalf("got %d %q, target saw Expect=%v; want 200 hello and no Expect forwarded", resp.StatusCode, b, sawExpect.Load())
	}
}

func TestProxy_413WhenBodyTooLarge(t *testing.T) {
	s := testSettings()
	s.MaxBodySize = 1024
	e := startLB(t, s)
	e.register("a", backendAddr(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	resp, err := e.client.Post(e.url+"/", "text/plain", strings.NewReader(strings.Repeat("x", 4096)))
	if err != nil {
		t.Fatal(err)
	}
	wantLBError(t, resp, http.StatusRequestEntityTooLarge, wire.ReasonBadRequest)
}

func TestClassify(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	tests := []struct {
		name       string
		err        error
		cut        bool
		wantStatus int
		wantReason string
	}{
		{"connection refused", refused, false, 502, wire.ReasonTargetRefused},
		{"other dial failure", &net.OpError{Op: "dial", Err: errors.New("no route to host")}, false, 502, wire.ReasonTargetRefused},
		{"connection reset", reset, false, 502, wire.ReasonTargetReset},
		{"closed before answering", fasthttp.ErrConnectionClosed, false, 502, wire.ReasonTargetReset},
		{"unexpected EOF", fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), false, 502, wire.ReasonTargetReset},
		{"response timeout", fasthttp.ErrTimeout, false, 504, wire.ReasonTargetTimeout},
		{"dial timeout", fasthttp.ErrDialTimeout, false, 504, wire.ReasonTargetTimeout},
		{"read deadline", fmt.Errorf("read: %w", os.ErrDeadlineExceeded), false, 504, wire.ReasonTargetTimeout},
		{"malformed answer", errors.New("cannot parse response status line"), false, 502, wire.ReasonTargetBadResponse},
		{"answer too large", fasthttp.ErrBodyTooLarge, false, 502, wire.ReasonTargetBadResponse},
		{"cut off by the deregistration delay", reset, true, 502, wire.ReasonTargetDeregistered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, reason := classify(tt.err, tt.cut)
			if status != tt.wantStatus || reason != tt.wantReason {
				t.Fatalf("classify(%v) = %d %s, want %d %s", tt.err, status, reason, tt.wantStatus, tt.wantReason)
			}
		})
	}
}

// BenchmarkProxy_Handle proxies one GET through the handler to a fasthttp
// backend on loopback: the LB's per-request cost (routing, headers, backend
// round trip) without a client-side network hop.
func BenchmarkProxy_Handle(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	backend := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("Hello, World!") }}
	go backend.Serve(ln)
	defer backend.Shutdown()

	g := NewTargetGroup(testSettings(), GroupDeps{Clock: clockwork.NewFakeClock(), Logger: discardLogger(), HealthChecker: newFakeChecker()})
	defer g.Close()
	if _, err := g.Register("a", ln.Addr().String()); err != nil {
		b.Fatal(err)
	}
	for g.acquireProbe() == nil {
		time.Sleep(time.Millisecond)
	}
	p := NewProxy(g, NewMetrics(g), testSettings(), discardLogger())
	client := &benchConn{remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}}
	var req fasthttp.Request
	req.Header.SetMethod("GET")
	req.SetRequestURI("/")
	req.Header.SetHost("lb.test")
	var ctx fasthttp.RequestCtx
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ctx.Init2(client, nil, false)
		req.CopyTo(&ctx.Request)
		p.handle(&ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d", ctx.Response.StatusCode())
		}
	}
}

// benchConn is the client connection of a benchmarked request: only its
// addresses are used.
type benchConn struct {
	net.Conn
	remote net.Addr
}

func (c *benchConn) RemoteAddr() net.Addr { return c.remote }
func (c *benchConn) LocalAddr() net.Addr  { return c.remote }

// acquireProbe reports a target in rotation, for benchmarks' setup.
func (g *TargetGroup) acquireProbe() *Target {
	t := g.acquire()
	if t != nil {
		t.release()
	}
	return t
}

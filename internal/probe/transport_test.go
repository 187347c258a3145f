package probe

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/wire"
)

// newTestServer starts an httptest server with h and closes it at cleanup.
func newTestServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// rawServer accepts connections and hands each to serve, numbered from 0.
func rawServer(t *testing.T, serve func(n int, c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(n, c)
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}

// readRequest reads one request head from br; false when the peer went away.
func readRequest(br *bufio.Reader) bool {
	_, err := http.ReadRequest(br)
	return err == nil
}

func closedPortURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/"
}

func statusHandler(status int, header map[string]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte("body\n"))
	}
}

func doOnce(t *testing.T, client http.RoundTripper, url string, timeout time.Duration, healthPath bool) (Observation, exchanged) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return exchange(client, req, timeout, healthPath)
}

// TestExchange_RealServers classifies what real sockets and servers do.
func TestExchange_RealServers(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cases := []struct {
		name       string
		url        func(t *testing.T) string
		healthPath bool
		want       Outcome
		status     int
	}{
		{"200 from the app", func(t *testing.T) string {
			return newTestServer(t, statusHandler(200, map[string]string{wire.HeaderVersion: "v1", wire.HeaderHost: "web-1"}))
		}, false, Outcome{ClassOK, ReasonResponse}, 200},
		{"connection refused", closedPortURL, false, Outcome{ClassReachedNothing, ReasonRefused}, 0},
		{"connection reset", func(t *testing.T) string {
			return rawServer(t, func(_ int, c net.Conn) {
				readRequest(bufio.NewReader(c))
				_ = c.(*net.TCPConn).SetLinger(0) // close with RST
			})
		}, false, Outcome{ClassReachedNothing, ReasonReset}, 0},
		{"closed before a response", func(t *testing.T) string {
			return rawServer(t, func(_ int, c net.Conn) { readRequest(bufio.NewReader(c)) })
		}, false, Outcome{ClassReachedNothing, ReasonEOF}, 0},
		{"body cut short", func(t *testing.T) string {
			return rawServer(t, func(_ int, c net.Conn) {
				readRequest(bufio.NewReader(c))
				_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b"))
			})
		}, false, Outcome{ClassReachedNothing, ReasonEOF}, 200},
		{"timeout", func(t *testing.T) string {
			return newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-release:
				}
			})
		}, false, Outcome{ClassReachedNothing, ReasonTimeout}, 0},
		{"mythex LB 502 target refused", func(t *testing.T) string {
			return newTestServer(t, statusHandler(502, map[string]string{wire.HeaderLB: wire.ReasonTargetRefused}))
		}, false, Outcome{ClassReachedNothing, ReasonLBMarked}, 502},
		{"mythex LB 504 target timeout", func(t *testing.T) string {
			return newTestServer(t, statusHandler(504, map[string]string{wire.HeaderLB: wire.ReasonTargetTimeout}))
		}, false, Outcome{ClassReachedNothing, ReasonLBMarked}, 504},
		{"mythex LB 503 no targets on the health path", func(t *testing.T) string {
			return newTestServer(t, statusHandler(503, map[string]string{wire.HeaderLB: wire.ReasonNoTargets}))
		}, true, Outcome{ClassReachedNothing, ReasonLBMarked}, 503},
		{"ALB 502", func(t *testing.T) string {
			return newTestServer(t, statusHandler(502, map[string]string{"Server": "awselb/2.0"}))
		}, false, Outcome{ClassReachedNothing, ReasonALB}, 502},
		{"unmarked 502 from some proxy", func(t *testing.T) string {
			return newTestServer(t, statusHandler(502, nil))
		}, false, Outcome{ClassReachedNothing, ReasonGatewayNoApp}, 502},
		{"500 from the app", func(t *testing.T) string {
			return newTestServer(t, statusHandler(500, map[string]string{wire.HeaderVersion: "v1"}))
		}, false, Outcome{ClassAppError, ReasonAppStatus}, 500},
		{"502 the app itself answered", func(t *testing.T) string {
			return newTestServer(t, statusHandler(502, map[string]string{wire.HeaderService: "gateway"}))
		}, false, Outcome{ClassAppError, ReasonAppStatus}, 502},
		{"503 from the health path", func(t *testing.T) string {
			return newTestServer(t, statusHandler(503, nil))
		}, true, Outcome{ClassDrainSignal, ReasonHealth503}, 503},
		{"503 off the health path", func(t *testing.T) string {
			return newTestServer(t, statusHandler(503, nil))
		}, false, Outcome{ClassAppError, ReasonAppStatus}, 503},
		{"redirect is not followed", func(t *testing.T) string {
			return newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/" {
					t.Errorf("redirect followed to %s", r.URL.Path)
				}
				http.Redirect(w, r, "/elsewhere", http.StatusFound)
			})
		}, false, Outcome{ClassOK, ReasonResponse}, 302},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := NewTransport(4, time.Second)
			t.Cleanup(client.CloseIdleConnections)
			obs, _ := doOnce(t, client, tc.url(t), 300*time.Millisecond, tc.healthPath)
			got := Classify(obs)
			if got != tc.want || obs.Status != tc.status {
				t.Errorf("got %v/%v status %d (err %v), want %v/%v status %d", got.Class, got.Reason, obs.Status, obs.Err, tc.want.Class, tc.want.Reason, tc.status)
			}
		})
	}
}

// TestExchange_ReusedConnectionDied: the keep-alive race. The server answers
// one request on a connection, then closes it when the next request arrives
// on it. Go's transport silently retries that GET on a new connection, which
// answers 200; the prober still sees the failure.
func TestExchange_ReusedConnectionDied(t *testing.T) {
	var conns atomic.Int32
	const okResp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Mythex-Version: v1\r\n\r\nok"
	url := rawServer(t, func(n int, c net.Conn) {
		conns.Add(1)
		br := bufio.NewReader(c)
		if n == 0 {
			// First connection: answer once, then hang up on the next request.
			if readRequest(br) {
				_, _ = c.Write([]byte(okResp))
				readRequest(br)
			}
			return
		}
		for readRequest(br) {
			_, _ = c.Write([]byte(okResp))
		}
	})
	client := NewTransport(4, time.Second)
	t.Cleanup(client.CloseIdleConnections)

	first, x1 := doOnce(t, client, url, 2*time.Second, false)
	if got := Classify(first); got.Class != ClassOK || x1.newConns != 1 {
		t.Fatalf("first request: %v/%v (err %v), %d new conns", got.Class, got.Reason, first.Err, x1.newConns)
	}
	second, x2 := doOnce(t, client, url, 2*time.Second, false)
	if second.Err != nil || second.Status != 200 {
		t.Fatalf("second request: status %d err %v; the transport's retry should have answered 200", second.Status, second.Err)
	}
	if !second.Retried || x2.newConns != 1 {
		t.Fatalf("second request: retried %v, new conns %d; want the retry seen", second.Retried, x2.newConns)
	}
	if got := Classify(second); got != (Outcome{ClassReachedNothing, ReasonReusedConnDied}) {
		t.Errorf("second request classified %v/%v, want reached_nothing/reused-conn-died", got.Class, got.Reason)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("server saw %d connections, want 2", n)
	}
}

// TestRun_RealServerMix: the prober against a real server that answers in
// turn ok, LB 502 and app 500; every class lands in the report. (Resets are
// left out: on a reused connection Go's transport retries them, shifting the
// turn; TestExchange_ReusedConnectionDied covers that.)
func TestRun_RealServerMix(t *testing.T) {
	var n atomic.Int64
	url := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 3 {
		case 0:
			statusHandler(200, map[string]string{wire.HeaderVersion: "v2", wire.HeaderHost: "web-2"})(w, r)
		case 1:
			statusHandler(502, map[string]string{wire.HeaderLB: wire.ReasonTargetReset})(w, r)
		case 2:
			statusHandler(500, map[string]string{wire.HeaderVersion: "v2"})(w, r)
		}
	})
	r, err := Run(t.Context(), Config{URL: url, Rate: 30, Duration: time.Second}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	checkSums(t, r)
	if r.Requests != 30 || r.OK != 10 || r.AppErrors != 10 || r.ReachedNothing != 10 || r.Unsent != 0 {
		t.Errorf("requests %d ok %d app %d nothing %d unsent %d; want 30 10 10 10 0 (reasons %+v, samples %q)",
			r.Requests, r.OK, r.AppErrors, r.ReachedNothing, r.Unsent, r.Reasons, r.ErrorSamples)
	}
	if r.Versions["v2"] != 20 || r.Hosts["web-2"] != 10 {
		t.Errorf("versions %v hosts %v", r.Versions, r.Hosts)
	}
	if r.ProbeErrors != 0 {
		t.Errorf("probe errors %d: %q", r.ProbeErrors, r.ErrorSamples)
	}
}

// TestRun_ProbeErrorIsNotReachedNothing: a name that does not resolve is the
// prober's problem, not a request the target dropped.
func TestRun_ProbeErrorIsNotReachedNothing(t *testing.T) {
	r, err := Run(t.Context(), Config{URL: "http://mythex-probe-test.invalid/", Rate: 5, Duration: time.Second}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 5 || r.ProbeErrors != 5 || r.ReachedNothing != 0 || r.Complete() {
		t.Errorf("requests %d probe errors %d reached nothing %d complete %v; reasons %+v", r.Requests, r.ProbeErrors, r.ReachedNothing, r.Complete(), r.Reasons)
	}
}

// BenchmarkExchange is one request through the prober's HTTP path (request,
// httptrace, body drain, header reads) against a local server, with the
// client and server sharing the machine.
func BenchmarkExchange(b *testing.B) {
	srv := httptest.NewServer(statusHandler(200, map[string]string{wire.HeaderVersion: "v1", wire.HeaderHost: "web-1"}))
	b.Cleanup(srv.Close)
	client := NewTransport(64, 2*time.Second)
	b.Cleanup(client.CloseIdleConnections)
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		obs, _ := exchange(client, req, 2*time.Second, false)
		if obs.Err != nil || obs.Status != 200 {
			b.Fatalf("status %d err %v", obs.Status, obs.Err)
		}
	}
}

// TestProber_StopClosesConnections: after Stop the default transport keeps
// no connection open to the target (a library user running many probes
// leaks nothing).
func TestProber_StopClosesConnections(t *testing.T) {
	var open atomic.Int64
	srv := httptest.NewUnstartedServer(statusHandler(200, nil))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	p := mustNew(t, Config{URL: srv.URL, Rate: 50, Duration: 500 * time.Millisecond}, Deps{})
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if r := p.Stop(); r.OK != 25 || r.NewConns < 1 {
		t.Fatalf("ok %d new conns %d", r.OK, r.NewConns)
	}
	waitFor(t, func() bool { return open.Load() == 0 })
}

// TestRun_RealSlowServerKeepsSchedule is the real-time counterpart of
// TestProber_OpenLoopAgainstSlowTarget: a real server that serves one
// request at a time in 60 ms (capacity ~16/s) probed at 50/s for 1 s. The
// requests arrive over about 1 s, on schedule (a closed-loop prober would need
// 3 s to send them), and the latency from the scheduled time reaches about
// 2 s for the last ones. Bounds are generous for a busy machine.
func TestRun_RealSlowServerKeepsSchedule(t *testing.T) {
	var mu sync.Mutex
	var first, last time.Time
	var arrivals int
	serve := make(chan struct{}, 1)
	url := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now := time.Now()
		if arrivals == 0 {
			first = now
		}
		last = now
		arrivals++
		mu.Unlock()
		serve <- struct{}{}
		defer func() { <-serve }()
		time.Sleep(60 * time.Millisecond) // the server's service time
	})
	r, err := Run(t.Context(), Config{URL: url, Rate: 50, Duration: time.Second, Timeout: 10 * time.Second}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	checkSums(t, r)
	if r.Requests != 50 || r.OK != 50 || r.Unsent != 0 {
		t.Fatalf("requests %d ok %d unsent %d, want 50 50 0", r.Requests, r.OK, r.Unsent)
	}
	mu.Lock()
	spread := last.Sub(first)
	mu.Unlock()
	if spread > 2*time.Second {
		t.Errorf("requests arrived over %v: the send schedule slipped (closed loop: ~3s; open loop: ~1s)", spread)
	}
	if r.Latency.Max < 1500*time.Millisecond {
		t.Errorf("max latency from scheduled time %v, want ≥ 1.5s (the queue builds up)", r.Latency.Max)
	}
	t.Logf("arrivals over %v; latency from scheduled time p50 %v max %v; from send p50 %v", spread, r.Latency.P50, r.Latency.Max, r.SendLatency.P50)
}

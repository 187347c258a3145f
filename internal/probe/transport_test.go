package probe

import (
	"bufio"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
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

// newTestTransport returns the default transport for url, its idle
// connections closed at cleanup.
func newTestTransport(t testing.TB, rawURL string) *fastTransport {
	t.Helper()
	u, err := neturl.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	tr := newFastTransport(u, http.MethodGet, "mythex-measure", 4, 2*time.Second)
	t.Cleanup(tr.closeIdle)
	return tr
}

// doOnce sends one request to url through a new default transport.
func doOnce(t *testing.T, url string, timeout time.Duration) (Observation, exchanged) {
	t.Helper()
	return newTestTransport(t, url).newExchanger().exchange(timeout)
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
		// The server's close races the client's write: a FIN read before
		// the request lands is EOF; a request that reaches the closed socket
		// draws a RST, read as a reset. Both reached nothing.
		{"closed right after accept", func(t *testing.T) string {
			return rawServer(t, func(_ int, c net.Conn) {})
		}, false, Outcome{ClassReachedNothing, ReasonEOF}, 0},
		{"reset mid-body", func(t *testing.T) string {
			return rawServer(t, func(_ int, c net.Conn) {
				readRequest(bufio.NewReader(c))
				_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b"))
				_ = c.(*net.TCPConn).SetLinger(0)
			})
		}, false, Outcome{ClassReachedNothing, ReasonReset}, 200},
		{"chunked body cut short", func(t *testing.T) string {
			return rawServer(t, func(_ int, c net.Conn) {
				readRequest(bufio.NewReader(c))
				_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"))
			})
		}, false, Outcome{ClassReachedNothing, ReasonEOF}, 200},
		{"head cut short", func(t *testing.T) string {
			return rawServer(t, func(_ int, c net.Conn) {
				readRequest(bufio.NewReader(c))
				_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Len"))
			})
		}, false, Outcome{ClassReachedNothing, ReasonEOF}, 0},
		{"timeout mid-body", func(t *testing.T) string {
			return rawServer(t, func(_ int, c net.Conn) {
				readRequest(bufio.NewReader(c))
				_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b"))
				<-release
			})
		}, false, Outcome{ClassReachedNothing, ReasonTimeout}, 200},
		{"malformed response", func(t *testing.T) string {
			return rawServer(t, func(_ int, c net.Conn) {
				readRequest(bufio.NewReader(c))
				_, _ = c.Write([]byte("SMTP ready\r\n\r\n"))
				<-release
			})
		}, false, Outcome{ClassReachedNothing, ReasonTransport}, 0},
		{"head larger than the prober's buffer is the prober's limit", func(t *testing.T) string {
			return newTestServer(t, statusHandler(200, map[string]string{"X-Big": strings.Repeat("x", readBufferSize)}))
		}, false, Outcome{ClassProbeError, ReasonLocal}, 0},
		{"redirect is not followed", func(t *testing.T) string {
			return newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/" {
					t.Errorf("redirect followed to %s", r.URL.Path)
				}
				http.Redirect(w, r, "/elsewhere", http.StatusFound)
			})
		}, false, Outcome{ClassOK, ReasonResponse}, 302},
	}
	// also holds, by case name, a second outcome as correct as want: the
	// other side of a race the test cannot order.
	also := map[string]Outcome{
		"closed right after accept": {ClassReachedNothing, ReasonReset},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Only the cases that end in a timeout get a short one: a loaded
			// machine can take longer than that to answer the others.
			timeout := 10 * time.Second
			if tc.want.Reason == ReasonTimeout {
				timeout = 300 * time.Millisecond
			}
			obs, _ := doOnce(t, tc.url(t), timeout)
			obs.HealthPath = tc.healthPath
			got := Classify(obs)
			other, raced := also[tc.name]
			ok := got == tc.want || (raced && got == other)
			if !ok || obs.Status != tc.status {
				want := fmt.Sprintf("%v/%v", tc.want.Class, tc.want.Reason)
				if raced {
					want += fmt.Sprintf(" or %v/%v", other.Class, other.Reason)
				}
				t.Errorf("got %v/%v status %d (err %v), want %s status %d", got.Class, got.Reason, obs.Status, obs.Err, want, tc.status)
			}
		})
	}
}

// keepAliveRaceServer answers one request on its first connection, then
// ends that connection when the next request arrives on it (closing, or
// resetting when reset), as a server whose keep-alive timeout fires just as
// the request is sent. Later connections answer every request. It returns
// the URL and the count of requests received.
func keepAliveRaceServer(t *testing.T, reset bool) (string, *atomic.Int32) {
	var requests atomic.Int32
	const okResp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Mythex-Version: v1\r\n\r\nok"
	url := rawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		for readRequest(br) {
			if requests.Add(1); n == 0 && requests.Load() > 1 {
				if reset {
					_ = c.(*net.TCPConn).SetLinger(0)
				}
				return
			}
			_, _ = c.Write([]byte(okResp))
		}
	})
	return url, &requests
}

// TestExchange_ReusedConnectionDied: the keep-alive race. The request on the
// reused connection fails and is never retried (the server sees it once): it
// reached nothing, as an ALB would answer 502. The next request dials anew.
func TestExchange_ReusedConnectionDied(t *testing.T) {
	for _, reset := range []bool{false, true} {
		t.Run(fmt.Sprintf("reset=%v", reset), func(t *testing.T) {
			url, requests := keepAliveRaceServer(t, reset)
			tr := newTestTransport(t, url)
			x := tr.newExchanger()
			first, _ := x.exchange(2 * time.Second)
			if got := Classify(first); got.Class != ClassOK || tr.dials() != 1 {
				t.Fatalf("first request: %v/%v (err %v), %d dials", got.Class, got.Reason, first.Err, tr.dials())
			}
			second, _ := x.exchange(2 * time.Second)
			if got := Classify(second); got != (Outcome{ClassReachedNothing, ReasonReusedConnDied}) || second.Status != 0 {
				t.Errorf("second request: %v/%v status %d (err %v, reused %v), want reached_nothing/reused-conn-died", got.Class, got.Reason, second.Status, second.Err, second.ReusedConn)
			}
			third, _ := x.exchange(2 * time.Second)
			if got := Classify(third); got.Class != ClassOK || tr.dials() != 2 {
				t.Errorf("third request: %v/%v (err %v), %d dials; want ok on a new connection", got.Class, got.Reason, third.Err, tr.dials())
			}
			if n := requests.Load(); n != 3 {
				t.Errorf("server received %d requests for 3 exchanges: a request was retried", n)
			}
		})
	}
}

// TestExchange_IdleConnectionClosedIsSkipped: a connection the server closed
// while it sat idle in the pool is not used (net/http's background read and
// an ALB notice the FIN the same way): the next request goes out on a new
// connection and is ok.
func TestExchange_IdleConnectionClosedIsSkipped(t *testing.T) {
	closed := make(chan struct{})
	const okResp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	url := rawServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if n == 0 {
			if readRequest(br) {
				_, _ = c.Write([]byte(okResp))
			}
			c.Close() // FIN while the prober holds the connection idle
			close(closed)
			return
		}
		for readRequest(br) {
			_, _ = c.Write([]byte(okResp))
		}
	})
	tr := newTestTransport(t, url)
	// Note the first connection, to wait for its FIN below.
	var first *probeConn
	dial := tr.hc.DialTimeout
	tr.hc.DialTimeout = func(addr string, timeout time.Duration) (net.Conn, error) {
		c, err := dial(addr, timeout)
		if pc, ok := c.(*probeConn); ok && first == nil {
			first = pc
		}
		return c, err
	}
	x := tr.newExchanger()
	if obs, _ := x.exchange(2 * time.Second); obs.Err != nil || obs.Status != 200 {
		t.Fatalf("first request: status %d err %v", obs.Status, obs.Err)
	}
	<-closed
	if first == nil {
		t.Fatal("the first request dialed no probeConn")
	}
	// The server's close returning does not mean the client's kernel has
	// taken the FIN in (a loaded machine defers loopback delivery to
	// ksoftirqd): wait until the idle connection shows it, as the next
	// request's check will. The connection sits idle in the pool, so this
	// peek is its only user.
	waitFor(t, first.closedWhileIdle)
	obs, _ := x.exchange(2 * time.Second)
	if got := Classify(obs); got.Class != ClassOK {
		t.Errorf("request after the idle close: %v/%v (err %v), want ok on a new connection", got.Class, got.Reason, obs.Err)
	}
	if n := tr.dials(); n != 2 {
		t.Errorf("%d connections dialed, want 2", n)
	}
}

// TestExchange_KeepAlive: requests reuse one connection, and the request on
// the wire is the URL's, path and query as given, with the prober's
// User-Agent and no compression negotiated.
func TestExchange_KeepAlive(t *testing.T) {
	var got []string
	var mu sync.Mutex
	url := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, fmt.Sprintf("%s %s host=%s ua=%s ae=%q", r.Method, r.RequestURI, r.Host, r.UserAgent(), r.Header.Get("Accept-Encoding")))
		mu.Unlock()
		w.Header().Set(wire.HeaderVersion, "v3")
		w.Header().Set(wire.HeaderHost, "web-9")
	})
	tr := newTestTransport(t, url+"/a//b/../c?x=1&y=%2F")
	x := tr.newExchanger()
	for i := range 3 {
		obs, ex := x.exchange(2 * time.Second)
		if Classify(obs).Class != ClassOK || ex.version != "v3" || ex.host != "web-9" {
			t.Fatalf("request %d: %+v %+v", i, obs, ex)
		}
	}
	if n := tr.dials(); n != 1 {
		t.Errorf("%d connections for 3 sequential requests, want 1", n)
	}
	host := strings.TrimPrefix(url, "http://")
	want := "GET /a//b/../c?x=1&y=%2F host=" + host + " ua=mythex-measure ae=\"\""
	mu.Lock()
	defer mu.Unlock()
	for _, g := range got {
		if g != want {
			t.Errorf("server saw %q, want %q", g, want)
		}
	}
}

// TestExchange_TLS: https targets get a TLS handshake at dial and keep the
// connection alive.
func TestExchange_TLS(t *testing.T) {
	srv := httptest.NewTLSServer(statusHandler(200, map[string]string{wire.HeaderVersion: "v1"}))
	t.Cleanup(srv.Close)
	tr := newTestTransport(t, srv.URL)
	x := tr.newExchanger()
	if obs, _ := x.exchange(2 * time.Second); obs.Err == nil {
		t.Fatalf("a certificate no root vouches for was accepted: status %d", obs.Status)
	}
	tr.d.tls.RootCAs = x509.NewCertPool()
	tr.d.tls.RootCAs.AddCert(srv.Certificate())
	for i := range 2 {
		obs, ex := x.exchange(2 * time.Second)
		if Classify(obs).Class != ClassOK || ex.version != "v1" {
			t.Fatalf("request %d: %+v %+v", i, obs, ex)
		}
	}
	if n := tr.dials(); n != 1 { // a failed handshake opens none
		t.Errorf("%d connections opened, want 1", n)
	}
}

// TestRun_RealServerMix: the prober against a real server that answers in
// turn ok, LB 502 and app 500; every class lands in the report. (Resets are
// left out: TestExchange_ReusedConnectionDied covers them.)
func TestRun_RealServerMix(t *testing.T) {
	t.Parallel() // waits on real time; its own server
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
	r, err := Run(t.Context(), Config{URL: url, Rate: 30, Duration: time.Second, Timeout: 10 * time.Second}, Deps{})
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
	t.Parallel() // waits on real time; its own server
	r, err := Run(t.Context(), Config{URL: "http://mythex-probe-test.invalid/", Rate: 5, Duration: time.Second}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 5 || r.ProbeErrors != 5 || r.ReachedNothing != 0 || r.Complete() {
		t.Errorf("requests %d probe errors %d reached nothing %d complete %v; reasons %+v", r.Requests, r.ProbeErrors, r.ReachedNothing, r.Complete(), r.Reasons)
	}
}

// BenchmarkExchange is one request through the prober's HTTP path (request,
// body read, header reads) against a local net/http server in the same
// process (its allocations count too), client and server sharing the
// machine.
func BenchmarkExchange(b *testing.B) {
	srv := httptest.NewServer(statusHandler(200, map[string]string{wire.HeaderVersion: "v1", wire.HeaderHost: "web-1"}))
	b.Cleanup(srv.Close)
	x := newTestTransport(b, srv.URL).newExchanger()
	b.ReportAllocs()
	for b.Loop() {
		obs, _ := x.exchange(2 * time.Second)
		if obs.Err != nil || obs.Status != 200 {
			b.Fatalf("status %d err %v", obs.Status, obs.Err)
		}
	}
}

// TestProber_StopClosesConnections: after Stop the default transport keeps
// no connection open to the target (a library user running many probes
// leaks nothing).
func TestProber_StopClosesConnections(t *testing.T) {
	t.Parallel() // waits on real time; its own server
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
	p := mustNew(t, Config{URL: srv.URL, Rate: 50, Duration: 500 * time.Millisecond, Timeout: 10 * time.Second}, Deps{})
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
// request at a time in 60 ms (capacity ~16/s) probed at 50/s for 1 s. An
// open-loop prober keeps sending while the server is busy, so requests queue
// up at the server (a closed-loop prober, waiting for each answer, never has
// more than its few workers' requests there), and the latency from the
// scheduled time reaches about 2 s for the last ones. Both hold however late
// a loaded machine runs the sends: requests that arrive faster than 60 ms
// apart queue, and the last of 50 served one by one ends ≥ 3 s after the
// first arrived while it was due within 1 s of the start.
func TestRun_RealSlowServerKeepsSchedule(t *testing.T) {
	t.Parallel() // waits on real time; its own server
	var mu sync.Mutex
	var first, last time.Time
	var arrivals, waiting, maxWaiting int
	serve := make(chan struct{}, 1)
	url := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now := time.Now()
		if arrivals == 0 {
			first = now
		}
		last = now
		arrivals++
		waiting++
		maxWaiting = max(maxWaiting, waiting)
		mu.Unlock()
		serve <- struct{}{}
		defer func() { <-serve }()
		mu.Lock()
		waiting--
		mu.Unlock()
		time.Sleep(60 * time.Millisecond) // the server's service time
	})
	r, err := Run(t.Context(), Config{URL: url, Rate: 50, Duration: time.Second, Timeout: 30 * time.Second}, Deps{})
	if err != nil {
		t.Fatal(err)
	}
	checkSums(t, r)
	if r.Requests != 50 || r.OK != 50 || r.Unsent != 0 {
		t.Fatalf("requests %d ok %d unsent %d, want 50 50 0", r.Requests, r.OK, r.Unsent)
	}
	mu.Lock()
	spread, queued := last.Sub(first), maxWaiting
	mu.Unlock()
	if queued < 10 {
		t.Errorf("at most %d requests waited at the server at once, want ≥ 10: the prober waited for answers (closed loop)", queued)
	}
	if r.Latency.Max < 1500*time.Millisecond {
		t.Errorf("max latency from scheduled time %v, want ≥ 1.5s (the queue builds up)", r.Latency.Max)
	}
	t.Logf("arrivals over %v, up to %d waiting; latency from scheduled time p50 %v max %v; from send p50 %v", spread, queued, r.Latency.P50, r.Latency.Max, r.SendLatency.P50)
}

// TestExchange_HEAD: a HEAD response's Content-Length announces a body that
// never comes; the exchange must not wait for it.
func TestExchange_HEAD(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	url := rawServer(t, func(_ int, c net.Conn) {
		br := bufio.NewReader(c)
		for readRequest(br) {
			_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Mythex-Version: v1\r\n\r\n"))
		}
		<-release
	})
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	tr := newFastTransport(u, http.MethodHead, "mythex-measure", 4, time.Second)
	t.Cleanup(tr.closeIdle)
	x := tr.newExchanger()
	for i := range 2 {
		obs, ex := x.exchange(time.Second)
		if Classify(obs).Class != ClassOK || ex.version != "v1" {
			t.Fatalf("HEAD %d: %v/%v status %d err %v", i, Classify(obs).Class, Classify(obs).Reason, obs.Status, obs.Err)
		}
	}
	if n := tr.dials(); n != 1 {
		t.Errorf("%d connections for 2 HEAD requests, want 1", n)
	}
}

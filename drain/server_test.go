package drain

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

const (
	testD = 15 * time.Second // serve period in the tests
	testS = 10 * time.Second // shutdown timeout in the tests
)

func testConfig() Config { return Config{ServePeriod: testD, ShutdownTimeout: testS} }

func TestServer_Drain_HealthFlipsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hs := startHarness(t, testConfig(), nil)

		before := hs.mustGet("/healthz")
		if before.status != http.StatusOK || before.body != "ok" || before.close {
			t.Fatalf("health before drain = %+v, want 200 \"ok\" on a kept-alive connection", before)
		}
		if hs.d.Draining() {
			t.Fatal("Draining() = true before Drain")
		}

		flip := time.Now()
		hs.d.Drain()
		if !hs.d.Draining() {
			t.Fatal("Draining() = false right after Drain")
		}
		after := hs.mustGet("/healthz")
		if after.status != http.StatusServiceUnavailable || after.body != "draining" {
			t.Fatalf("health after drain = %+v, want 503 \"draining\"", after)
		}
		if !after.close {
			t.Error("health after drain: resp.Close = false, want Connection: close")
		}
		if lag := time.Since(flip); lag != 0 {
			t.Errorf("health flipped %s after Drain, want at once", lag)
		}
		if !strings.Contains(hs.logs.String(), "drain: started") {
			t.Errorf("no drain start in the log:\n%s", hs.logs)
		}
	})
}

func TestServer_Serve_KeepsServingAndListeningThroughServePeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hs := startHarness(t, testConfig(), nil)
		hs.d.Drain()

		// Each request needs a new connection (the previous answer closed its
		// own), so each one also proves the listener still accepts.
		for _, at := range []time.Duration{0, time.Second, testD / 2, testD - time.Millisecond, testD - time.Nanosecond} {
			hs.sleepUntil(at)
			acceptedBefore := hs.ln.accepted.Load()
			r := hs.mustGet("/work")
			if r.status != http.StatusOK || r.body != "hello" {
				t.Errorf("at %s: GET /work = %d %q, want 200 \"hello\"", at, r.status, r.body)
			}
			if !r.close {
				t.Errorf("at %s: resp.Close = false, want Connection: close", at)
			}
			if got := hs.ln.accepted.Load(); got != acceptedBefore+1 {
				t.Errorf("at %s: listener accepted %d new connections, want 1", at, got-acceptedBefore)
			}
			if hs.isDone() {
				t.Fatalf("Serve returned at %s, inside the serve period %s", at, testD)
			}
		}

		hs.sleepUntil(testD)
		synctest.Wait()
		if _, err := hs.ln.Dial(context.Background()); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial at the end of the serve period: err = %v, want connection refused", err)
		}
		if err := hs.wait(); err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
		// The last connection lingers at most net/http's 500ms after its
		// "Connection: close" answer; nothing else may delay the end.
		if took := hs.since(); took < testD || took > testD+time.Second {
			t.Errorf("Serve returned after %s, want within [%s, %s]", took, testD, testD+time.Second)
		}
	})
}

func TestServer_Serve_ShutdownWaitsForInFlightUpToTimeout(t *testing.T) {
	tests := []struct {
		name     string
		work     time.Duration // how long the in-flight request takes
		start    time.Duration // when it starts, after Drain
		wantErr  error
		wantEnd  time.Duration // when Serve returns (exactly, unless slack)
		slack    time.Duration // Shutdown polls idle connections every ≤500ms
		wantResp bool
	}{
		{"finishes inside the timeout", 3 * time.Second, testD - time.Second, nil, testD + 2*time.Second, 600 * time.Millisecond, true},
		{"finishes just inside the timeout", testS + time.Second - time.Millisecond, testD - time.Second, nil, testD + testS - time.Millisecond, 600 * time.Millisecond, true},
		{"outlives the timeout", time.Hour, testD - time.Second, ErrShutdownTimeout, testD + testS, 0, false},
		{"started before the drain, outlives the timeout", time.Hour, 0, ErrShutdownTimeout, testD + testS, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					select {
					case <-time.After(tt.work):
						_, _ = w.Write([]byte("done"))
					case <-r.Context().Done():
					}
				})
				hs := startHarness(t, testConfig(), slow)
				hs.d.Drain()
				hs.sleepUntil(tt.start)

				type result struct {
					r   response
					err error
				}
				got := make(chan result, 1)
				go func() {
					r, err := hs.get("/slow")
					got <- result{r, err}
				}()
				synctest.Wait() // the request is in the handler

				err := hs.wait()
				end := hs.since()
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
					t.Errorf("Serve = %v, want %v", err, tt.wantErr)
				}
				if end < tt.wantEnd || end > tt.wantEnd+tt.slack {
					t.Errorf("Serve returned at %s, want %s (+%s)", end, tt.wantEnd, tt.slack)
				}
				res := <-got
				if tt.wantResp && (res.err != nil || res.r.status != http.StatusOK || res.r.body != "done") {
					t.Errorf("in-flight request = %+v, %v; want 200 \"done\"", res.r, res.err)
				}
				if !tt.wantResp && res.err == nil {
					t.Errorf("in-flight request = %+v, want its connection cut", res.r)
				}
			})
		})
	}
}

func TestServer_IdleTimeout_ClosesIdleKeepAliveConnection(t *testing.T) {
	const idle = 75 * time.Second
	synctest.Test(t, func(t *testing.T) {
		hs := startHarness(t, Config{IdleTimeout: idle}, nil)
		conn, err := hs.ln.Dial(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		for i := range 2 { // the connection is kept alive between requests
			if _, err := io.WriteString(conn, "GET /a HTTP/1.1\r\nHost: app\r\n\r\n"); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("response %d: %v", i, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.Close {
				t.Fatalf("response %d asks to close before any drain", i)
			}
		}
		idleFrom := time.Now()
		closed := make(chan time.Duration, 1)
		go func() {
			_, _ = br.ReadByte() // EOF when the server closes the idle connection
			closed <- time.Since(idleFrom)
		}()
		time.Sleep(idle - time.Millisecond)
		synctest.Wait()
		select {
		case after := <-closed:
			t.Fatalf("idle connection closed after %s, before the idle timeout %s", after, idle)
		default:
		}
		if after := <-closed; after != idle {
			t.Errorf("idle connection closed after %s, want the idle timeout %s", after, idle)
		}
	})
}

func TestServer_Drain_ConnectionCloseRetiresKeptAliveConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hs := startHarness(t, testConfig(), nil)
		conn, err := hs.ln.Dial(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		ask := func() *http.Response {
			t.Helper()
			if _, err := io.WriteString(conn, "GET /a HTTP/1.1\r\nHost: app\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp
		}
		if resp := ask(); resp.Close {
			t.Fatal("answer before the drain closes the connection")
		}
		// A connection pooled before the drain is still served during it, and
		// retired by its answer.
		hs.sleepUntil(time.Second)
		hs.d.Drain()
		hs.sleepUntil(5 * time.Second)
		resp := ask()
		if resp.StatusCode != http.StatusOK || !resp.Close {
			t.Fatalf("answer during drain: %d, resp.Close %v; want 200 with Connection: close", resp.StatusCode, resp.Close)
		}
		if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
			t.Errorf("read after the Connection: close answer: %v, want EOF (server closed it)", err)
		}
		if now := hs.since(); now >= testD {
			t.Errorf("connection closed at %s, after the serve period", now)
		}
	})
}

func TestServer_Serve_ContextCancelStartsDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := newPipeListener()
		srv := &http.Server{Handler: okHandler()}
		d, err := New(srv, Config{ServePeriod: testD, ShutdownTimeout: testS, NoSignals: true, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		start := time.Now()
		go func() { errc <- d.Serve(ctx, ln) }()
		time.Sleep(time.Second)
		cancel()
		synctest.Wait()
		if !d.Draining() {
			t.Fatal("Draining() = false after ctx was cancelled")
		}
		if err := <-errc; err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
		if took := time.Since(start); took != time.Second+testD {
			t.Errorf("Serve returned %s after start, want cancel (1s) + serve period %s", took, testD)
		}
	})
}

func TestServer_Drain_BeforeServeCountsFromDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &http.Server{Handler: okHandler()}
		d, err := New(srv, Config{ServePeriod: testD, NoSignals: true, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		d.Drain()
		time.Sleep(5 * time.Second)
		if err := d.Serve(context.Background(), newPipeListener()); err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
		if took := time.Since(start); took != testD {
			t.Errorf("Serve returned %s after Drain, want the serve period %s", took, testD)
		}
	})
}

func TestServer_Serve_Twice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hs := startHarness(t, testConfig(), nil)
		synctest.Wait()
		if err := hs.d.Serve(context.Background(), newPipeListener()); !errors.Is(err, ErrAlreadyServing) {
			t.Errorf("second Serve = %v, want ErrAlreadyServing", err)
		}
	})
}

// failingListener fails every Accept with a permanent error.
type failingListener struct{ pipeListener }

var errBrokenListener = errors.New("listener broke")

func (*failingListener) Accept() (net.Conn, error) { return nil, errBrokenListener }

func TestServer_Serve_ListenerFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &http.Server{}
		d, err := New(srv, Config{NoSignals: true, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		err = d.Serve(context.Background(), &failingListener{*newPipeListener()})
		if !errors.Is(err, ErrServeStopped) || !errors.Is(err, errBrokenListener) {
			t.Errorf("Serve = %v, want ErrServeStopped wrapping the listener's error", err)
		}
		select {
		case <-d.Done():
		default:
			t.Error("Done() not closed after Serve returned")
		}
	})
}

// breakingListener is a pipeListener whose Accept fails for good once broken.
type breakingListener struct {
	*pipeListener
	broken chan struct{}
}

func (l *breakingListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.broken:
		return nil, errBrokenListener
	}
}

func TestServer_Serve_ListenerBreaksWithRequestInFlight(t *testing.T) {
	for _, draining := range []bool{false, true} {
		name := map[bool]string{false: "before the drain", true: "during the serve period"}[draining]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := &breakingListener{newPipeListener(), make(chan struct{})}
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					time.Sleep(3 * time.Second)
					_, _ = w.Write([]byte("done"))
				})}
				d, err := New(srv, Config{ServePeriod: testD, ShutdownTimeout: testS, NoSignals: true, Logger: discardLogger()})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				errc := make(chan error, 1)
				go func() { errc <- d.Serve(context.Background(), ln) }()
				if draining {
					d.Drain()
				}
				tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return ln.Dial(ctx) }}
				defer tr.CloseIdleConnections()
				got := make(chan string, 1)
				go func() {
					resp, err := (&http.Client{Transport: tr}).Get("http://app/")
					if err != nil {
						got <- err.Error()
						return
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					got <- string(b)
				}()
				time.Sleep(time.Second)
				close(ln.broken)
				err = <-errc
				if !errors.Is(err, ErrServeStopped) || !errors.Is(err, errBrokenListener) {
					t.Errorf("Serve = %v, want ErrServeStopped wrapping the listener's error", err)
				}
				if body := <-got; body != "done" {
					t.Errorf("in-flight request got %q, want \"done\" (the shutdown lets it finish)", body)
				}
				if took := time.Since(start); took < 3*time.Second || took > 4*time.Second {
					t.Errorf("Serve returned after %s, want once the 3s request is done, without a serve period", took)
				}
				if !d.Draining() {
					t.Error("Draining() = false after the server stopped serving")
				}
			})
		})
	}
}

func TestServer_ListenAndServe_BadAddress(t *testing.T) {
	srv := &http.Server{Addr: "127.0.0.1:-1"}
	d, err := New(srv, Config{NoSignals: true, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	err = d.ListenAndServe(context.Background())
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:-1") {
		t.Errorf("ListenAndServe = %v, want a listen error naming the address", err)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("ListenAndServe error %v does not wrap the *net.OpError", err)
	}
}

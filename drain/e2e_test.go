package drain_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	testkit.Exit(code)
}

// appProc is the sample app running as a real process on a real socket.
type appProc struct {
	*testbin.AppProc
	addr string // where it listens
}

// startApp runs the sample app with args on a free loopback port and waits
// (up to 30s) until it logs the address it listens on.
func startApp(t *testing.T, args ...string) *appProc {
	t.Helper()
	p := &appProc{AppProc: testbin.StartApp(t, nil, append([]string{"--listen", "127.0.0.1:0"}, args...)...)}
	p.addr = p.Listening(t)
	return p
}

// get sends GET path on a new connection, as a load balancer opening one
// would, and returns status, body and whether the answer said Connection: close.
func (p *appProc) get(path string) (int, string, bool, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + p.addr + path)
	if err != nil {
		return 0, "", false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Close, err
}

// sigterm sends SIGTERM to p and waits (up to 5s) for its health endpoint to
// answer 503 "draining" with Connection: close; it returns when SIGTERM was sent.
func (p *appProc) sigterm(t *testing.T) time.Time {
	t.Helper()
	sent := time.Now()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body, closes, err := p.get("/healthz")
		if err != nil {
			t.Fatalf("health after SIGTERM: %v (the server stopped listening)", err)
		}
		if code == http.StatusServiceUnavailable {
			if body != "draining" || !closes {
				t.Errorf("health after SIGTERM = 503 %q, Connection: close %v; want \"draining\", true", body, closes)
			}
			return sent
		}
		if time.Now().After(deadline) {
			t.Fatal("health still 200 5s after SIGTERM")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitExit waits (up to 30s) for p to exit and returns how long after since.
func (p *appProc) waitExit(t *testing.T, since time.Time) time.Duration {
	t.Helper()
	select {
	case <-p.Exited():
		return time.Since(since)
	case <-time.After(30 * time.Second):
		t.Fatal("app still running 30s after SIGTERM")
		return 0
	}
}

func TestDrain_RealSIGTERM(t *testing.T) {
	t.Parallel()
	const d = 2 * time.Second
	p := startApp(t, "--drain-serve-period", d.String(), "--shutdown-timeout", "5s")
	if code, body, _, err := p.get("/healthz"); err != nil || code != 200 || body != "ok" {
		t.Fatalf("health before SIGTERM = %d %q %v, want 200 ok", code, body, err)
	}
	sent := p.sigterm(t)

	// Real traffic keeps being served, on new connections (so the listener
	// still accepts), with Connection: close, through the first half of the
	// serve period. (The serve period starts when the app gets the signal,
	// after sent; the half left is the margin for a request that a loaded
	// machine delivers late: a request arriving after the period may be
	// refused, which is right.)
	served := 0
	for time.Since(sent) < d/2 {
		code, body, closes, err := p.get("/work")
		if err != nil {
			t.Fatalf("GET /work %s after SIGTERM, inside the serve period: %v", time.Since(sent), err)
		}
		if code != 200 || !strings.HasPrefix(body, "service=app ") || !closes {
			t.Fatalf("GET /work during the drain = %d %q, Connection: close %v; want 200, close", code, body, closes)
		}
		served++
	}
	if served < 2 {
		t.Fatalf("%d requests served during the serve period, want several", served)
	}

	took := p.waitExit(t, sent)
	if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if took < d {
		t.Errorf("app exited %s after SIGTERM, before the serve period %s ended", took, d)
	}
	if c, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
		// A dial to a free loopback port can connect to itself, when the
		// kernel picks that same port as the source (TCP simultaneous
		// open): that is no listener.
		if self := c.LocalAddr().String() == c.RemoteAddr().String(); !self {
			t.Errorf("dial after exit: connected to %s, want connection refused", c.RemoteAddr())
		}
		c.Close()
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial after exit: %v, want connection refused", err)
	}
	for _, want := range []string{"drain: started", "drain: serve period over", "drain: shutdown complete"} {
		if !strings.Contains(p.Logs(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

func TestDrain_RealSIGTERM_ShutdownWaitsForInFlight(t *testing.T) {
	t.Parallel()
	const d, latency = time.Second, 2500 * time.Millisecond
	p := startApp(t, "--drain-serve-period", d.String(), "--shutdown-timeout", "10s", "--latency", latency.String())
	sent := p.sigterm(t)
	// Started right after the flip, it is still in flight when the serve
	// period ends; the shutdown must let it finish.
	code, _, _, err := p.get("/slow")
	if err != nil || code != 200 {
		t.Errorf("request in flight across the end of the serve period = %d, %v; want 200", code, err)
	}
	took := p.waitExit(t, sent)
	if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if took < latency {
		t.Errorf("app exited %s after SIGTERM, before its in-flight request (%s) finished", took, latency)
	}
}

package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
	"github.com/mythex/mythex/internal/wire"
)

// These tests run the real binary, on real sockets, with real signals.

func TestMain(m *testing.M) {
	// The tests run the app and wait on its timers (start delays, crash
	// times, drain periods), not on CPU: eight at once.
	testbin.SetParallel(8)
	code := m.Run()
	testbin.Cleanup()
	testkit.Exit(code)
}

// proc is the app binary running as a process.
type proc struct{ *testbin.AppProc }

// launch starts the app binary with args and env (KEY=VALUE, added to the
// test's environment). The cleanup kills it if it still runs.
func launch(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return &proc{testbin.StartApp(t, env, args...)}
}

// wait waits (up to 30s) for the app to exit and returns when, after start.
func (p *proc) wait(t *testing.T) time.Duration {
	t.Helper()
	select {
	case <-p.Exited():
		return time.Since(p.Started)
	case <-time.After(30 * time.Second):
		t.Fatal("app still running after 30s")
		return 0
	}
}

func (p *proc) running() bool {
	select {
	case <-p.Exited():
		return false
	default:
		return true
	}
}

// answer is one HTTP exchange on a new connection.
type answer struct {
	status int
	body   string
	header http.Header
	close  bool
}

func get(addr, path string) (answer, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header, resp.Close}, err
}

// freeAddr returns a loopback address nothing listens on (for tests that must
// know the address before the app listens).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}

// answersAs reports whether an HTTP server at addr answers as the app whose
// host name is host (MYTHEX_APP_HOST_NAME, which the app sends back in
// wire.HeaderHost). A mere connection does not say it is the app: a port
// the test found free (freeAddr), or one the app let go, can be taken
// meanwhile by any program on the machine (the suite runs many), and a dial
// to a free loopback port in the ephemeral range can connect to itself
// when the kernel picks that same port as the source (TCP simultaneous
// open).
func answersAs(addr, host string) bool {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.Header.Get(wire.HeaderHost) == host
}

// hostEnv names the app's host uniquely for t, for answersAs.
func hostEnv(t *testing.T) (env []string, host string) {
	host = "test-" + strconv.Itoa(os.Getpid()) + "-" + strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	return []string{"MYTHEX_APP_HOST_NAME=" + host}, host
}

func TestApp_ServesAndReports(t *testing.T) {
	t.Parallel()
	p := launch(t, []string{"MYTHEX_APP_SERVICE=gateway", "MYTHEX_APP_VERSION=v2", "MYTHEX_APP_HOST_NAME=web-7"},
		"--listen", "127.0.0.1:0", "--version", "v3")
	addr := p.Listening(t)
	a, err := get(addr, "/orders/1")
	if err != nil {
		t.Fatal(err)
	}
	if a.status != 200 || a.body != "service=gateway version=v3 host=web-7\n" {
		t.Errorf("GET = %d %q, want the flag's version over the env's", a.status, a.body)
	}
	for h, want := range map[string]string{wire.HeaderService: "gateway", wire.HeaderVersion: "v3", wire.HeaderHost: "web-7"} {
		if got := a.header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if h, err := get(addr, "/healthz"); err != nil || h.status != 200 || h.body != "ok" {
		t.Errorf("health = %+v %v, want 200 ok", h, err)
	}
	if !strings.Contains(p.Logs(), "version=v3") {
		t.Errorf("start line lacks the version:\n%s", p.Logs())
	}
}

func TestApp_BootCrash_ExitsWithoutListening(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	const after = 700 * time.Millisecond
	env, host := hostEnv(t)
	p := launch(t, env, "--listen", addr, "--crash-on-start", after.String())
	for p.running() {
		if answersAs(addr, host) {
			t.Fatalf("%s answered as the app; a boot crash never listens", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := p.wait(t)
	if code := p.Cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if took < after {
		t.Errorf("exited after %s, before --crash-on-start %s", took, after)
	}
	if strings.Contains(p.Logs(), "app: listening") || !strings.Contains(p.Logs(), "crash on start") {
		t.Errorf("log should show a crash and no listening:\n%s", p.Logs())
	}
}

func TestApp_CrashAfter_ExitsWithCodeAfterServing(t *testing.T) {
	t.Parallel()
	for _, code := range []int{3, 0} {
		t.Run("code "+strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			const after = 1500 * time.Millisecond
			env, host := hostEnv(t)
			p := launch(t, env, "--listen", "127.0.0.1:0", "--crash-after", after.String(), "--crash-exit-code", strconv.Itoa(code))
			addr := p.Listening(t)
			if a, err := get(addr, "/"); err != nil || a.status != 200 {
				t.Fatalf("GET / before the crash = %+v %v", a, err)
			}
			if !answersAs(addr, host) {
				t.Fatalf("%s does not answer as the app (%s) before the crash", addr, host)
			}
			took := p.wait(t)
			if got := p.Cmd.ProcessState.ExitCode(); got != code {
				t.Errorf("exit code %d, want %d", got, code)
			}
			if took < after {
				t.Errorf("exited after %s, before --crash-after %s", took, after)
			}
			if answersAs(addr, host) {
				t.Errorf("%s still answers as the app after the crash", addr)
			}
		})
	}
}

func TestApp_StartDelay_ListensLate(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	const delay = time.Second
	env, host := hostEnv(t)
	p := launch(t, env, "--listen", addr, "--start-delay", delay.String())
	if answersAs(addr, host) {
		t.Fatalf("%s answers as the app at once, despite --start-delay", addr)
	}
	if got := p.Listening(t); got != addr {
		t.Fatalf("listening on %s, want %s", got, addr)
	}
	if took := time.Since(p.Started); took < delay {
		t.Errorf("listening %s after start, before --start-delay %s", took, delay)
	}
	if a, err := get(addr, "/"); err != nil || a.status != 200 {
		t.Errorf("GET / after the start delay = %+v %v", a, err)
	}
	if !answersAs(addr, host) {
		t.Errorf("%s does not answer as the app (%s) once listening", addr, host)
	}
}

func TestApp_IgnoreSIGTERM_OnlySIGKILLStopsIt(t *testing.T) {
	t.Parallel()
	p := launch(t, nil, "--listen", "127.0.0.1:0", "--ignore-sigterm", "--drain-serve-period", "100ms", "--shutdown-timeout", "100ms")
	addr := p.Listening(t)
	for range 3 {
		if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	// Had SIGTERM counted, health would flip at once and the app would be
	// gone 200ms later; watch it for well over that.
	for watch := time.Now(); time.Since(watch) < 1500*time.Millisecond; time.Sleep(50 * time.Millisecond) {
		a, err := get(addr, "/healthz")
		if err != nil || a.status != 200 {
			t.Fatalf("health after SIGTERM = %+v %v; want 200, still serving", a, err)
		}
	}
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t)
	ws, ok := p.Cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("app ended with %v, want killed by SIGKILL", p.Cmd.ProcessState)
	}
}

func TestApp_Unhealthy(t *testing.T) {
	t.Parallel()
	p := launch(t, []string{"MYTHEX_APP_UNHEALTHY=true"}, "--listen", "127.0.0.1:0", "--health-path", "/up")
	addr := p.Listening(t)
	if a, err := get(addr, "/up"); err != nil || a.status != 503 {
		t.Errorf("health = %+v %v, want 503", a, err)
	}
	if a, err := get(addr, "/"); err != nil || a.status != 200 {
		t.Errorf("GET / = %+v %v, want 200", a, err)
	}
}

func TestApp_SIGTERM_DrainsThenExits0(t *testing.T) {
	t.Parallel()
	const d = 2 * time.Second
	p := launch(t, nil, "--listen", "127.0.0.1:0", "--drain-serve-period", d.String(), "--shutdown-timeout", "3s")
	addr := p.Listening(t)
	sent := time.Now()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		a, err := get(addr, "/healthz")
		if err != nil {
			t.Fatalf("health after SIGTERM: %v", err)
		}
		if a.status == 503 && a.body == "draining" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health still %d %q 5s after SIGTERM", a.status, a.body)
		}
	}
	// Requests sent in the first half of the serve period are served; the
	// other half is the margin for a request a loaded machine delivers late
	// (one arriving after the period may be refused, which is right).
	served := 0
	for time.Since(sent) < d/2 {
		a, err := get(addr, "/")
		if err != nil {
			t.Fatalf("GET / %s after SIGTERM (serve period %s): %v", time.Since(sent), d, err)
		}
		if a.status != 200 || !a.close {
			t.Fatalf("GET / while draining = %d, Connection: close %v; want 200, close", a.status, a.close)
		}
		if h, err := get(addr, "/healthz"); err != nil || h.status != 503 {
			t.Fatalf("health while draining = %+v %v, want 503", h, err)
		}
		served++
	}
	if served == 0 {
		t.Fatal("nothing served during the serve period")
	}
	p.wait(t)
	if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if took := time.Since(sent); took < d {
		t.Errorf("exited %s after SIGTERM, before the serve period %s", took, d)
	}
	for _, want := range []string{"drain: started", "drain: shutdown complete", "app: stopped after draining"} {
		if !strings.Contains(p.Logs(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

func TestApp_SecondSignal_SkipsServePeriod(t *testing.T) {
	t.Parallel()
	const d = 60 * time.Second // the test would time out if it were served in full
	p := launch(t, nil, "--listen", "127.0.0.1:0", "--drain-serve-period", d.String())
	addr := p.Listening(t)
	sent := time.Now()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if a, err := get(addr, "/healthz"); err == nil && a.status == 503 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("health did not flip within 5s of SIGTERM")
		}
	}
	if err := p.Cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	p.wait(t)
	if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if took := time.Since(sent); took > d/2 {
		t.Errorf("exited %s after SIGTERM; a second signal should skip the %s serve period", took, d)
	}
	if !strings.Contains(p.Logs(), "skipping the rest of the serve period") {
		t.Errorf("log does not say the serve period was skipped:\n%s", p.Logs())
	}
}

func TestApp_Check(t *testing.T) {
	t.Parallel()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(ok.Close)
	unhealthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	t.Cleanup(unhealthy.Close)
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"200", []string{"check", ok.URL + "/healthz"}, 0},
		{"503", []string{"check", unhealthy.URL}, 1},
		{"nothing listening", []string{"check", "http://" + freeAddr(t) + "/healthz"}, 1},
		{"no URL", []string{"check"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := launch(t, nil, tt.args...)
			p.wait(t)
			if code := p.Cmd.ProcessState.ExitCode(); code != tt.want {
				t.Errorf("app %v exit code %d, want %d", tt.args, code, tt.want)
			}
		})
	}
}

func TestApp_BadInput_Exits2(t *testing.T) {
	t.Parallel()
	p := launch(t, []string{"MYTHEX_APP_LATENCY=slow"})
	p.wait(t)
	if code := p.Cmd.ProcessState.ExitCode(); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if !strings.Contains(p.Logs(), "MYTHEX_APP_LATENCY") {
		t.Errorf("error does not name the variable:\n%s", p.Logs())
	}
}

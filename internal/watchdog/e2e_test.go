package watchdog

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/freeport"
	"github.com/mythex/mythex/internal/hostlock"
	"github.com/mythex/mythex/internal/runtime"
	"github.com/mythex/mythex/internal/runtime/process"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
)

// These tests run the real sample app under the real process runtime, with a
// real host lock and definition store, on the real clock at scaled timings.

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	testkit.Exit(code)
}

// realHost is one host: a state directory with a definition store, the
// process runtime and the host lock, running examples/local/compose.yaml.
type realHost struct {
	dir   string
	store *definition.Store
	rt    *process.Process
	ports map[string]int
}

// newRealHost resolves examples/local/compose.yaml for web-1 at version with
// the sample app, free ports, drain D, checks every 100ms; publishes it and
// starts every service, waiting until all are healthy.
func newRealHost(t testing.TB, drain time.Duration) *realHost {
	t.Helper()
	h := &realHost{dir: t.TempDir(), ports: map[string]int{}}
	for _, n := range theFour {
		h.ports[n] = freePort(t)
	}
	var err error
	if h.store, err = definition.OpenStore(filepath.Join(h.dir, "definitions")); err != nil {
		t.Fatal(err)
	}
	if h.rt, err = process.New(process.Options{StateDir: h.dir}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sts, _ := h.rt.Status(context.Background())
		for _, s := range sts {
			if s.Running() {
				_, _ = h.rt.Stop(context.Background(), s.Name, 0)
			}
		}
		_ = h.rt.Close()
	})
	d := h.resolve(t, "v1", drain)
	if _, err := h.store.Publish(d); err != nil {
		t.Fatal(err)
	}
	for _, s := range d.Services {
		if err := h.rt.Start(context.Background(), s); err != nil {
			t.Fatalf("start %s: %v", s.Name, err)
		}
	}
	h.waitAll(t, d)
	return h
}

func (h *realHost) resolve(t testing.TB, version string, drain time.Duration) *definition.Definition {
	t.Helper()
	app, err := testbin.Build(testbin.App)
	if err != nil {
		t.Fatal(err)
	}
	compose, err := os.ReadFile("../../examples/local/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(h.dir, "src")
	if err := os.MkdirAll(filepath.Join(src, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "compose.yaml"), compose, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(app, filepath.Join(src, "bin", "app")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	d, err := definition.Resolve(context.Background(), definition.Input{
		ComposeFile: filepath.Join(src, "compose.yaml"), Version: version, Host: "web-1",
		Target: "127.0.0.1:" + strconv.Itoa(h.ports["gateway"]),
		Vars: map[string]string{
			"API_PORT":              strconv.Itoa(h.ports["api"]),
			"ORCHESTRATOR_PORT":     strconv.Itoa(h.ports["orchestrator"]),
			"PUBLISH_WORKER_PORT":   strconv.Itoa(h.ports["publish-worker"]),
			"HEALTH_START_PERIOD":   "5s",
			"HEALTH_START_INTERVAL": "50ms",
		},
		Fleet: map[string]string{
			definition.VarDrainServePeriod:     drain.String(),
			definition.VarDrainShutdownTimeout: "500ms",
			definition.VarStopGracePeriod:      "10s",
			definition.VarKeepAliveIdleTimeout: "75s",
			definition.VarHealthPath:           "/healthz",
			definition.VarHealthInterval:       "100ms",
			definition.VarHealthTimeout:        "1s",
		},
	})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return d
}

// waitAll waits until every service of d runs its spec, healthy.
func (h *realHost) waitAll(t testing.TB, d *definition.Definition) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sts, err := h.rt.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		checks, ok := runtime.Verify(d, sts)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("services not healthy within 30s: %+v", checks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// instance returns the running instance of name, if any.
func (h *realHost) instance(t testing.TB, name string) (runtime.ServiceStatus, bool) {
	t.Helper()
	sts, err := h.rt.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.Name == name && s.Running() {
			return s, true
		}
	}
	return runtime.ServiceStatus{}, false
}

// watch starts a watchdog on h at policy p, on the real clock.
func (h *realHost) watch(t *testing.T, p Policy) *Watchdog {
	t.Helper()
	w, err := New(Config{Definitions: h.store, Runtime: h.rt, Lock: hostlock.New(h.dir), StateDir: h.dir, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	w.Start()
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// freePort returns a loopback port for a child process to bind, claimed
// against every other test process (freeport.Ports): a port the kernel picks
// (bind to port 0) can be taken by another process before the child binds it.
func freePort(t testing.TB) int {
	t.Helper()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// A service killed with SIGKILL outside a deploy is running again within
// K × W, and not before K strikes: not before (K−1) × W.
func TestWatchdog_E2E_SIGKILLBackWithinKW(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	t.Parallel()
	h := newRealHost(t, 300*time.Millisecond)
	p := Policy{Interval: 250 * time.Millisecond, FailuresBeforeHeal: 4}
	kw := time.Duration(p.FailuresBeforeHeal) * p.Interval
	w := h.watch(t, p)

	victim, _ := h.instance(t, "gateway")
	killed := time.Now()
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var back, healthy time.Duration
	deadline := time.Now().Add(kw + 20*time.Second)
	for time.Now().Before(deadline) {
		if s, ok := h.instance(t, "gateway"); ok && s.PID != victim.PID {
			if back == 0 {
				back = time.Since(killed)
			}
			if s.Health.Status == runtime.HealthHealthy {
				healthy = time.Since(killed)
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if back == 0 || healthy == 0 {
		t.Fatalf("gateway not back within %v; watchdog status %+v", kw+20*time.Second, w.Status())
	}
	t.Logf("K×W = %v: gateway running again after %v, healthy after %v", kw, back, healthy)
	// Rounds come every W; the K-th strike is at most K×W after the kill.
	// The margin allows for the rounds' own time, the start of the new
	// process and this loop's polls on a machine running other suites (as
	// the agent's tests allow); a watchdog that waited for anything else
	// (a default 60 s interval, a backoff) still fails.
	if back > kw+5*time.Second {
		t.Errorf("gateway back after %v, want within K×W = %v (+5s margin)", back, kw)
	}
	if back < time.Duration(p.FailuresBeforeHeal-1)*p.Interval {
		t.Errorf("gateway back after %v: healed before the K-th strike ((K−1)×W = %v)", back, time.Duration(p.FailuresBeforeHeal-1)*p.Interval)
	}
	for _, n := range theFour {
		if n == "gateway" {
			continue
		}
		if s, ok := h.instance(t, n); !ok || s.RestartCount != 0 {
			t.Errorf("%s was touched: %+v", n, s)
		}
	}
}

// Services draining during a deploy — health failing on purpose for far
// longer than K × W — are never healed: the deploy holds the host lock from
// the drain to the start of the new version. After the deploy the new
// version runs and the watchdog has healed nothing.
func TestWatchdog_E2E_DrainDuringDeployNeverHealed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	t.Parallel()
	const drain = 2 * time.Second
	h := newRealHost(t, drain)
	p := Policy{Interval: 100 * time.Millisecond, FailuresBeforeHeal: 4} // K×W = 400ms ≪ the drain
	w := h.watch(t, p)
	ctx := context.Background()

	deploy := hostlock.New(h.dir)
	if err := deploy.Lock(ctx, "deploy: v2 by e2e", 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Drain the whole host: SIGTERM every service; each answers 503 for the
	// drain period while it keeps serving, then exits.
	stopped := make(chan runtime.StopResult, len(theFour))
	for _, n := range theFour {
		go func() {
			res, _ := h.rt.Stop(ctx, n, runtime.UseSpecGrace)
			stopped <- res
		}()
	}
	sawUnhealthy := false
	var results []runtime.StopResult
	for len(results) < len(theFour) {
		select {
		case res := <-stopped:
			results = append(results, res)
		case <-time.After(10 * time.Millisecond):
			if s, ok := h.instance(t, "api"); ok && s.Health.Status == runtime.HealthUnhealthy {
				sawUnhealthy = true
			}
		}
	}
	for _, res := range results {
		if res.Took < drain || res.Killed {
			t.Fatalf("%s stopped after %v (killed %v), want a full drain of %v", res.Name, res.Took, res.Killed, drain)
		}
	}
	if !sawUnhealthy {
		t.Fatal("api never reported unhealthy while draining")
	}
	v2 := h.resolve(t, "v2", 300*time.Millisecond)
	if _, err := h.store.Publish(v2); err != nil {
		t.Fatal(err)
	}
	for _, s := range v2.Services {
		if err := h.rt.Start(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	h.waitAll(t, v2)
	skipped := testutil.ToFloat64(w.m.rounds.WithLabelValues(roundSkipped, string(CauseLockHeld)))
	if err := deploy.Unlock(); err != nil {
		t.Fatal(err)
	}
	if skipped < 5 {
		t.Errorf("rounds skipped while the deploy held the lock: %v, want several over a %v drain at W=%v", skipped, drain, p.Interval)
	}
	// K+2 checked rounds after the deploy: all ok, nothing healed.
	before := testutil.ToFloat64(w.m.rounds.WithLabelValues(roundChecked, ""))
	waitFor(t, func() bool {
		return testutil.ToFloat64(w.m.rounds.WithLabelValues(roundChecked, ""))-before >= float64(p.FailuresBeforeHeal+2)
	})
	for _, s := range w.Status().Services {
		if s.Heals != 0 || s.State != StateOK {
			t.Errorf("%s after the deploy: %+v, want ok and never healed", s.Name, s)
		}
	}
	for _, n := range theFour {
		if got := testutil.ToFloat64(w.m.heals.WithLabelValues(n, "ok")) + testutil.ToFloat64(w.m.heals.WithLabelValues(n, "error")); got != 0 {
			t.Errorf("heals_total{%s} = %v, want 0", n, got)
		}
		if s, ok := h.instance(t, n); !ok || s.Version != "v2" {
			t.Errorf("%s after the deploy = %+v, want v2 running", n, s)
		}
	}
}

// BenchmarkWatchdog_runOnce_Process is a round over the four real services
// of examples/local under the process runtime.
func BenchmarkWatchdog_runOnce_Process(b *testing.B) {
	h := newRealHost(b, 300*time.Millisecond)
	w, err := New(Config{Definitions: h.store, Runtime: h.rt, Lock: hostlock.New(h.dir), StateDir: h.dir})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	benchRound(b, w, len(theFour))
}

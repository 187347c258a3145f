package agent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/runtime"
	"github.com/mythex/mythex/internal/watchdog"
)

// newWatchedHost is newTestHost with a watchdog at W, K; the watchdog is
// closed first at cleanup, so that it does not heal what cleanup stops.
func newWatchedHost(t *testing.T, w time.Duration, k int) *testHost {
	t.Helper()
	h := newTestHost(t, func(c *Config) { c.Watchdog = &watchdog.Policy{Interval: w, FailuresBeforeHeal: k} })
	t.Cleanup(func() { _ = h.agent.Watchdog().Close() })
	return h
}

// acquire takes the host lease the way the rolling deploy does: a watchdog
// round may hold the host lock for a moment, so ErrLeaseHeld is retried for
// a while.
func (h *testHost) acquire(t *testing.T, ctx context.Context, holder string) agentapi.Lease {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := h.client.AcquireLease(ctx, false, holder, time.Minute)
		if err == nil {
			return l
		}
		if !errors.Is(err, agentapi.ErrLeaseHeld) || time.Now().After(deadline) {
			t.Fatalf("acquire lease: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// deployed puts version v1 on h under a lease, marks it good and releases.
func (h *testHost) deployed(t *testing.T, ctx context.Context) {
	t.Helper()
	h.deployedWith(t, ctx, nil)
}

// deployedWith is deployed with extra compose variables.
func (h *testHost) deployedWith(t *testing.T, ctx context.Context, vars map[string]string) {
	t.Helper()
	l := h.acquire(t, ctx, "deploy v1")
	h.deployV(t, ctx, l.ID, h.def("v1", vars))
	if err := h.client.MarkGood(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.client.ReleaseLease(ctx, false, l.ID); err != nil {
		t.Fatal(err)
	}
}

// waitStatus polls the agent's status until cond holds.
func (h *testHost) waitStatus(t *testing.T, ctx context.Context, what string, cond func(agentapi.Status) bool) agentapi.Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := h.client.Status(ctx)
		if err == nil && cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("never %s; last status %+v (err %v)", what, st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func running(st agentapi.Status, name string) (agentapi.ServiceStatus, bool) {
	for _, s := range st.Services {
		if s.Name == name && s.Running {
			return s, true
		}
	}
	return agentapi.ServiceStatus{}, false
}

func watched(st agentapi.Status, name string) agentapi.WatchedService {
	if st.Watchdog != nil {
		for _, s := range st.Watchdog.Services {
			if s.Name == name {
				return s
			}
		}
	}
	return agentapi.WatchedService{}
}

func pidOf(t *testing.T, h *testHost, name string) int {
	t.Helper()
	sts, err := h.agent.rt.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.Name == name && s.Running() {
			return s.PID
		}
	}
	t.Fatalf("%s is not running", name)
	return 0
}

// The watchdog shows in /v1/status; maintenance pauses it through the API
// and, turned off, lets it heal a service killed meanwhile.
func TestAgent_WatchdogStatusAndMaintenance(t *testing.T) {
	t.Parallel()
	const w, k = 50 * time.Millisecond, 3
	h := newWatchedHost(t, w, k)
	ctx := ctxT(t)
	h.deployed(t, ctx)
	st := h.waitStatus(t, ctx, "watched both services ok", func(st agentapi.Status) bool {
		return st.Watchdog != nil && watched(st, "api").State == "ok" && watched(st, "gateway").State == "ok"
	})
	if wd := st.Watchdog; !wd.Enabled || wd.Interval != "50ms" || wd.FailuresBeforeHeal != k || wd.LastRound == nil || !strings.Contains(wd.LastResult, "checked 2 services of v1") {
		t.Errorf("watchdog status = %+v", wd)
	}

	if _, err := h.client.SetMaintenance(ctx, 0, "x", "alice"); !errors.Is(err, agentapi.ErrBadRequest) || !strings.Contains(err.Error(), "for") {
		t.Fatalf("maintenance for 0s = %v, want ErrBadRequest naming for", err)
	}
	if _, err := h.client.SetMaintenance(ctx, time.Hour, "", "alice"); !errors.Is(err, agentapi.ErrBadRequest) || !strings.Contains(err.Error(), "reason") {
		t.Fatalf("maintenance without reason = %v, want ErrBadRequest naming reason", err)
	}
	rep, err := h.client.SetMaintenance(ctx, time.Hour, "db optimize", "alice")
	if err != nil || rep.Maintenance == nil || rep.Maintenance.Reason != "db optimize" || rep.Maintenance.By != "alice" {
		t.Fatalf("maintenance on = %+v, %v", rep, err)
	}
	if got, err := h.client.Maintenance(ctx); err != nil || got.Maintenance == nil || !got.Maintenance.Until.Equal(rep.Maintenance.Until) {
		t.Fatalf("GET maintenance = %+v, %v", got, err)
	}

	victim := pidOf(t, h, "gateway")
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.waitStatus(t, ctx, "reported the dead gateway, paused", func(st agentapi.Status) bool {
		g := watched(st, "gateway")
		return st.Watchdog.Maintenance != nil && g.State == "failing" && strings.Contains(g.Reason, "paused") &&
			strings.Contains(st.Watchdog.LastResult, "skipped: maintenance")
	})
	// Many rounds (at least 4 K) later the gateway is still down: healing is paused.
	rounds := 0
	var last time.Time
	h.waitStatus(t, ctx, "ran rounds in maintenance", func(st agentapi.Status) bool {
		if st.Watchdog.LastRound != nil && !st.Watchdog.LastRound.Equal(last) {
			last = *st.Watchdog.LastRound
			rounds++
		}
		if _, ok := running(st, "gateway"); ok {
			t.Fatalf("gateway healed during maintenance: %+v", st.Watchdog)
		}
		return rounds > 4*k
	})

	off, err := h.client.EndMaintenance(ctx, "alice")
	if err != nil || off.Ended == nil || off.Ended.Reason != "db optimize" {
		t.Fatalf("maintenance off = %+v, %v", off, err)
	}
	ended := time.Now()
	st = h.waitStatus(t, ctx, "healed the gateway", func(st agentapi.Status) bool {
		s, ok := running(st, "gateway")
		return ok && s.Health == agentapi.HealthHealthy
	})
	if took := time.Since(ended); took > time.Duration(k)*w+5*time.Second {
		t.Errorf("gateway back %v after maintenance ended; K×W = %v", took, time.Duration(k)*w)
	}
	if g := watched(h.waitStatus(t, ctx, "counted the heal", func(st agentapi.Status) bool { return watched(st, "gateway").Heals == 1 }), "gateway"); g.LastHeal == nil {
		t.Errorf("gateway record after heal = %+v", g)
	}
	if got, _ := h.client.Maintenance(ctx); got.Maintenance != nil {
		t.Errorf("maintenance still on: %+v", got)
	}

	// The metrics are on the agent's /metrics.
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+agentapi.PathMetrics, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`mythex_watchdog_rounds_total{reason="maintenance",result="skipped"}`,
		`mythex_watchdog_heals_total{result="ok",service="gateway"} 1`,
		`mythex_watchdog_decisions_total{decision="heal",reason="exited"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestAgent_MaintenanceNeedsTokenAndWatchdog(t *testing.T) {
	t.Parallel()
	h := newTestHost(t) // no watchdog
	ctx := ctxT(t)
	if _, err := h.client.SetMaintenance(ctx, time.Hour, "x", ""); err == nil || !strings.Contains(err.Error(), "no watchdog") {
		t.Errorf("maintenance without a watchdog = %v, want it refused", err)
	}
	st, err := h.client.Status(ctx)
	if err != nil || st.Watchdog != nil {
		t.Errorf("status without a watchdog = %+v, %v", st.Watchdog, err)
	}
	w := newWatchedHost(t, time.Minute, 4)
	req, _ := http.NewRequest(http.MethodPut, w.srv.URL+agentapi.PathMaintenance, strings.NewReader(`{"for":"1h","reason":"x"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("maintenance without a token = %d, want 401", resp.StatusCode)
	}
	if w.agent.Watchdog().Maintenance() != nil {
		t.Error("an unauthorised request turned maintenance on")
	}
}

// A deploy drains the gateway far longer than K × W — its health check fails
// on purpose for 1.5s against a patience of 50ms — and the watchdog,
// skipping every round while the lease holds the host lock, never heals it.
// The serve period is long so that the window in which the draining gateway
// is both running and reported unhealthy (after two failed checks 100ms
// apart) is wide enough to observe on a loaded CI machine.
func TestAgent_WatchdogNeverHealsADrainUnderLease(t *testing.T) {
	t.Parallel()
	const w, k = 25 * time.Millisecond, 3
	h := newWatchedHost(t, w, k)
	ctx := ctxT(t)
	slowDrain := map[string]string{"DRAIN_SERVE_PERIOD": "1500ms"}
	h.deployedWith(t, ctx, slowDrain)
	h.waitStatus(t, ctx, "watched the gateway ok", func(st agentapi.Status) bool { return watched(st, "gateway").State == "ok" })

	l := h.acquire(t, ctx, "deploy v2")
	if _, err := h.client.Publish(ctx, l.ID, h.def("v2", slowDrain)); err != nil {
		t.Fatal(err)
	}
	if err := h.client.Drain(ctx, l.ID, []string{"gateway"}); err != nil {
		t.Fatal(err)
	}
	h.waitStatus(t, ctx, "saw the gateway draining (503) while the lease is held", func(st agentapi.Status) bool {
		s, ok := running(st, "gateway")
		return ok && s.Health == agentapi.HealthUnhealthy && strings.Contains(st.Watchdog.LastResult, "host lock held")
	})
	if _, err := h.client.Stop(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Start(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.client.ReleaseLease(ctx, false, l.ID); err != nil {
		t.Fatal(err)
	}
	h.waitStatus(t, ctx, "checked v2 after the deploy", func(st agentapi.Status) bool {
		return strings.Contains(st.Watchdog.LastResult, "checked 2 services of v2: 2 ok")
	})
	skipped := counterValue(t, h, `mythex_watchdog_rounds_total{reason="lock-held",result="skipped"}`)
	if skipped < 3 {
		t.Errorf("rounds skipped during the deploy = %v, want several (the drain alone is 1.5s at W=25ms)", skipped)
	}
	st, _ := h.client.Status(ctx)
	for _, n := range []string{"api", "gateway"} {
		if s := watched(st, n); s.Heals != 0 {
			t.Errorf("%s healed %d times across a deploy", n, s.Heals)
		}
	}
	if got := counterValue(t, h, `mythex_watchdog_decisions_total{decision="heal",reason="unhealthy"}`); got != 0 {
		t.Errorf("heals of an unhealthy (draining) service: %v", got)
	}
}

// counterValue reads one series from the agent's /metrics; 0 when absent.
func counterValue(t *testing.T, h *testHost, series string) float64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+agentapi.PathMetrics, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				return f
			}
		}
	}
	return 0
}

func TestAgent_Bootstrap(t *testing.T) {
	t.Parallel()
	h := newTestHost(t)
	ctx := ctxT(t)
	if _, err := h.agent.Bootstrap(ctx); !errors.Is(err, ErrNothingPublished) {
		t.Fatalf("bootstrap of a fresh host = %v, want ErrNothingPublished", err)
	}
	h.deployed(t, ctx)
	refs, _ := h.agent.Store().Refs()

	// The server reboots: every service is gone.
	for _, n := range []string{"api", "gateway"} {
		if err := syscall.Kill(pidOf(t, h, n), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	h.waitStatus(t, ctx, "saw both services dead", func(st agentapi.Status) bool {
		_, a := running(st, "api")
		_, g := running(st, "gateway")
		return !a && !g
	})

	// A deploy holds the host lock: the bootstrap waits for it.
	l := h.acquire(t, ctx, "deploy v1 again")
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err := h.agent.Bootstrap(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "deploy v1 again") {
		t.Fatalf("bootstrap under a lease = %v, want it to wait, naming the holder", err)
	}
	if err := h.client.ReleaseLease(ctx, false, l.ID); err != nil {
		t.Fatal(err)
	}

	rep, err := h.agent.Bootstrap(ctx)
	if err != nil || len(rep.Services) != 2 {
		t.Fatalf("bootstrap = %+v, %v", rep, err)
	}
	vr, err := h.client.Verify(ctx, nil, "v1")
	if err != nil || !vr.OK {
		t.Fatalf("after bootstrap verify = %+v, %v", vr, err)
	}
	if after, _ := h.agent.Store().Refs(); after != refs {
		t.Errorf("bootstrap changed the definitions: %+v → %+v", refs, after)
	}
	if st, _ := h.client.Status(ctx); st.LockHolder != "" {
		t.Errorf("bootstrap left the host lock held by %q", st.LockHolder)
	}
	// Again: everything already runs, nothing is restarted.
	before, _ := h.agent.rt.Status(ctx)
	if _, err := h.agent.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := h.agent.rt.Status(ctx)
	for i := range before {
		if before[i].State == runtime.StateRunning && (after[i].PID != before[i].PID || after[i].RestartCount != before[i].RestartCount) {
			t.Errorf("a second bootstrap restarted %s", before[i].Name)
		}
	}
}

func TestClaimStateDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	release, err := ClaimStateDir(dir, "agent")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ClaimStateDir(dir, "bootstrap"); !errors.Is(err, ErrStateDirInUse) || !strings.Contains(err.Error(), "agent (pid") {
		t.Fatalf("second claim = %v, want ErrStateDirInUse naming the agent", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	release, err = ClaimStateDir(dir, "bootstrap")
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	_ = release()
}

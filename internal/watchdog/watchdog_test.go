package watchdog

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/hostlock"
	"github.com/mythex/mythex/internal/runtime"
)

var defaultPolicy = Policy{Interval: time.Minute, FailuresBeforeHeal: 4}

func TestNew_Errors(t *testing.T) {
	e := newEnv(t, defaultPolicy, nil)
	base := Config{Definitions: e.store, Runtime: e.rt, Lock: e.lock, StateDir: e.dir}
	tests := []struct {
		name   string
		change func(*Config)
		want   error
	}{
		{"no definitions", func(c *Config) { c.Definitions = nil }, ErrInvalid},
		{"no runtime", func(c *Config) { c.Runtime = nil }, ErrInvalid},
		{"no lock", func(c *Config) { c.Lock = nil }, ErrInvalid},
		{"no state dir", func(c *Config) { c.StateDir = "" }, ErrInvalid},
		{"bad policy", func(c *Config) { c.Policy.FailuresBeforeHeal = -2 }, ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.change(&c)
			if _, err := New(c); !errors.Is(err, tc.want) {
				t.Errorf("New = %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("corrupt maintenance file", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, MaintenanceFile), []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
		c := base
		c.StateDir = dir
		if _, err := New(c); !errors.Is(err, ErrMaintenanceFile) {
			t.Errorf("New = %v, want ErrMaintenanceFile", err)
		}
	})
}

// A service killed outside a deploy comes back on the K-th round, from the
// current definition, and not before.
func TestWatchdog_runOnce_HealsOnKthStrike(t *testing.T) {
	d := newDefinition(t, "v2", theFour...)
	e := newEnv(t, defaultPolicy, d)
	if r := e.round(); r.Result != RoundChecked || decision(t, r, "api").Kind != KindOK {
		t.Fatalf("first round = %+v, want checked, api ok", r)
	}
	e.rt.crash("api")
	for i := 1; i < 4; i++ {
		r := e.round()
		if got := decision(t, r, "api"); got.Kind != KindStrike || got.Strike != i || got.Cause != CauseExited {
			t.Fatalf("round %d: api %s/%s strike %d, want strike %d", i, got.Kind, got.Cause, got.Strike, i)
		}
		if calls := e.rt.takeCalls(); len(calls) != 0 {
			t.Fatalf("round %d acted before the K-th strike: %v", i, calls)
		}
	}
	r := e.round()
	if got := decision(t, r, "api"); got.Kind != KindHeal {
		t.Fatalf("4th round: %s, want heal", got.Kind)
	}
	if calls := e.rt.takeCalls(); !slices.Equal(calls, []string{"start api v2"}) {
		t.Fatalf("heal calls = %v, want one start of api v2", calls)
	}
	if st := e.record("api"); st.State != StateHealing || st.Heals != 1 || st.Strikes != 0 {
		t.Errorf("status after heal = %+v", st)
	}
	r = e.round()
	if got := decision(t, r, "api"); got.Kind != KindOK {
		t.Errorf("round after heal: api %s, want ok", got.Kind)
	}
	for _, n := range []string{"gateway", "orchestrator", "publish-worker"} {
		if got := decision(t, r, n); got.Kind != KindOK {
			t.Errorf("%s: %s, want ok", n, got.Kind)
		}
	}
	if n := testutil.ToFloat64(e.w.m.heals.WithLabelValues("api", "ok")); n != 1 {
		t.Errorf("heals_total{api,ok} = %v, want 1", n)
	}
	if n := testutil.ToFloat64(e.w.m.decisions.WithLabelValues("strike", "exited")); n != 3 {
		t.Errorf("decisions_total{strike,exited} = %v, want 3", n)
	}
	if got := e.logs.lines(map[string]any{"msg": "watchdog strike", "service": "api", "strike": 2, "of": 4}); len(got) != 1 {
		t.Errorf("log lines for strike 2 of 4: %d, want 1", len(got))
	}
	if got := e.logs.lines(map[string]any{"msg": "watchdog heal", "service": "api", "reason": "exited"}); len(got) != 1 {
		t.Errorf("heal log lines: %d, want 1", len(got))
	}
}

// While someone else holds the host lock, rounds are skipped: the runtime is
// not even asked, nothing is counted, and the count starts over afterwards.
func TestWatchdog_runOnce_SkipsWhileLocked(t *testing.T) {
	d := newDefinition(t, "v2", "api", "gateway")
	e := newEnv(t, defaultPolicy, d)
	e.rt.crash("gateway")
	e.round()
	e.round()
	e.round() // gateway: 3 strikes
	deploy := e.otherLock("deploy: v3 by ci")
	for i := range 10 {
		r := e.round()
		if r.Result != RoundSkippedLocked || !strings.Contains(r.Detail, "deploy: v3 by ci") {
			t.Fatalf("locked round %d = %s %q, want skipped naming the deploy", i, r.Result, r.Detail)
		}
		if got := decision(t, r, "gateway"); got.Kind != KindSkipLocked {
			t.Fatalf("gateway: %s, want skip-locked", got.Kind)
		}
	}
	if calls := e.rt.takeCalls(); len(calls) != 0 {
		t.Fatalf("acted while the lock was held: %v", calls)
	}
	if st := e.record("gateway"); st.Strikes != 0 || !strings.Contains(st.Reason, "deploy: v3 by ci") {
		t.Errorf("gateway status while locked = %+v, want 0 strikes and the holder", st)
	}
	if err := deploy.Unlock(); err != nil {
		t.Fatal(err)
	}
	// The run of failures starts again: K more rounds before a heal.
	for i := 1; i < 4; i++ {
		if got := decision(t, e.round(), "gateway"); got.Kind != KindStrike || got.Strike != i {
			t.Fatalf("after the lock, round %d: %s %d, want strike %d", i, got.Kind, got.Strike, i)
		}
	}
	if got := decision(t, e.round(), "gateway"); got.Kind != KindHeal {
		t.Fatalf("4th round after the lock: %s, want heal", got.Kind)
	}
	if n := testutil.ToFloat64(e.w.m.rounds.WithLabelValues("skipped", "lock-held")); n != 10 {
		t.Errorf("rounds_total{skipped,lock-held} = %v, want 10", n)
	}
	if got := e.logs.lines(map[string]any{"msg": "watchdog round skipped: host lock held", "reason": "lock-held"}); len(got) != 10 {
		t.Errorf("skip log lines: %d, want 10", len(got))
	}
}

// The round holds the host lock while it heals and releases it at its end,
// so a deploy waits at most one round.
func TestWatchdog_runOnce_HoldsLockOnlyForTheRound(t *testing.T) {
	d := newDefinition(t, "v2", "api")
	e := newEnv(t, Policy{Interval: time.Minute, FailuresBeforeHeal: 1}, d)
	e.rt.crash("api")
	var during []error
	e.rt.during = func(string) {
		during = append(during, hostlock.New(e.dir).TryLock("deploy probe"))
	}
	e.round()
	if len(during) != 1 || !errors.Is(during[0], hostlock.ErrHeld) || !strings.Contains(during[0].Error(), "watchdog") {
		t.Fatalf("a deploy trying the lock during the heal got %v, want ErrHeld by watchdog", during)
	}
	probe := hostlock.New(e.dir)
	if err := probe.TryLock("deploy after the round"); err != nil {
		t.Fatalf("lock after the round: %v, want free", err)
	}
	if err := probe.Unlock(); err != nil {
		t.Fatal(err)
	}
	if got := hostlock.Holder(e.dir); got != "" {
		t.Errorf("holder after the round = %q, want free", got)
	}
}

// The watchdog never writes the definition store, heals included.
func TestWatchdog_runOnce_NeverWritesTheDefinition(t *testing.T) {
	d := newDefinition(t, "v2", theFour...)
	e := newEnv(t, Policy{Interval: time.Minute, FailuresBeforeHeal: 2}, d)
	dir := filepath.Join(e.dir, "definitions")
	before := snapshotDir(t, dir)
	e.rt.crash("gateway")
	e.rt.health("api", runtime.HealthUnhealthy)
	e.rt.running(service("orchestrator", "v1"), runtime.HealthHealthy) // drift
	heals := 0
	for range 12 {
		for _, s := range e.round().Services {
			if s.Decision.Kind == KindHeal {
				heals++
			}
		}
	}
	if heals < 3 {
		t.Fatalf("heals = %d, want the crashed, unhealthy and drifted services healed", heals)
	}
	if after := snapshotDir(t, dir); !maps2Equal(before, after) {
		t.Errorf("definition store changed:\nbefore %v\nafter  %v", before, after)
	}
}

func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		b, err := os.ReadFile(filepath.Join(dir, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		info, _ := en.Info()
		out[en.Name()] = string(b) + "@" + info.ModTime().String()
	}
	return out
}

func maps2Equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Drift is replaced by the definition's spec: the other instance is stopped
// and the definition's started.
func TestWatchdog_runOnce_HealsDrift(t *testing.T) {
	d := newDefinition(t, "v2", "api")
	e := newEnv(t, defaultPolicy, d)
	e.rt.running(service("api", "v1"), runtime.HealthHealthy)
	for i := 1; i <= 3; i++ {
		if got := decision(t, e.round(), "api"); got.Kind != KindDrift || got.Cause != CauseDriftVersion {
			t.Fatalf("round %d: %s/%s, want drift/drift-version", i, got.Kind, got.Cause)
		}
	}
	if st := e.record("api"); st.State != StateDrifted {
		t.Errorf("status state %s, want drifted", st.State)
	}
	if got := decision(t, e.round(), "api"); got.Kind != KindHeal || !got.StopFirst {
		t.Fatalf("4th round: %+v, want heal stopping first", got)
	}
	if calls := e.rt.takeCalls(); !slices.Equal(calls, []string{"stop api", "start api v2"}) {
		t.Errorf("calls = %v, want stop then start of v2", calls)
	}
	if got := decision(t, e.round(), "api"); got.Kind != KindOK {
		t.Errorf("after heal: %s, want ok", got.Kind)
	}
}

// A service whose heals never hold backs off exponentially and is reported
// crash-looping instead of being restarted every K rounds for ever.
func TestWatchdog_runOnce_CrashLoopBacksOff(t *testing.T) {
	d := newDefinition(t, "v2", "api")
	e := newEnv(t, defaultPolicy, d)
	e.rt.crashOnStart["api"] = true
	e.rt.crash("api")
	var healRounds []int
	for i := 1; i <= 60; i++ {
		r := e.round()
		if decision(t, r, "api").Kind == KindHeal {
			healRounds = append(healRounds, i)
		}
	}
	// K=4, W=1m: heals at 4 and 8 (strikes alone), then crash-looping: not
	// before 8m after heal 2 (round 16), then 16m after (round 32), then 32m
	// (round 64, beyond this run).
	if want := []int{4, 8, 16, 32}; !slices.Equal(healRounds, want) {
		t.Errorf("heal rounds = %v, want %v", healRounds, want)
	}
	st := e.record("api")
	if st.State != StateCrashLooping || st.HealsInRow != 4 || !st.NextHeal.Equal(st.LastHeal.Add(32*time.Minute)) {
		t.Errorf("status = %+v, want crash-looping, 4 in a row, next heal 32m after the last", st)
	}
	if n := testutil.ToFloat64(e.w.m.crashLoop.WithLabelValues("api")); n != 1 {
		t.Errorf("crash_looping{api} = %v, want 1", n)
	}
	if got := e.logs.lines(map[string]any{"msg": "watchdog backoff: crash-looping", "service": "api"}); len(got) == 0 {
		t.Error("no backoff log line")
	}
	// It recovers: after K healthy rounds it is no longer crash-looping.
	e.rt.crashOnStart["api"] = false
	for decision(t, e.round(), "api").Kind != KindHeal {
	}
	for range 4 {
		e.round()
	}
	if st := e.record("api"); st.State != StateOK || st.HealsInRow != 0 {
		t.Errorf("after recovery: %+v, want ok with the loop forgotten", st)
	}
}

// A heal that fails is reported and still counts toward the backoff.
func TestWatchdog_runOnce_HealFails(t *testing.T) {
	d := newDefinition(t, "v2", "api")
	e := newEnv(t, Policy{Interval: time.Minute, FailuresBeforeHeal: 1}, d)
	e.rt.crash("api")
	e.rt.startErr["api"] = errBoom
	r := e.round()
	if got := r.Services[0]; got.Decision.Kind != KindHeal || !errors.Is(got.HealErr, errBoom) {
		t.Fatalf("round = %+v, want a heal failing with boom", got)
	}
	st := e.record("api")
	if !strings.Contains(st.Reason, "heal failed") || !strings.Contains(st.Reason, "boom") || st.HealsInRow != 1 {
		t.Errorf("status = %+v, want the failure reported", st)
	}
	if n := testutil.ToFloat64(e.w.m.heals.WithLabelValues("api", "error")); n != 1 {
		t.Errorf("heals_total{api,error} = %v, want 1", n)
	}
}

// Instances of services that are not in the definition are never touched,
// however dead they look.
func TestWatchdog_runOnce_LeavesOtherServicesAlone(t *testing.T) {
	d := newDefinition(t, "v2", "api")
	e := newEnv(t, Policy{Interval: time.Minute, FailuresBeforeHeal: 1}, d)
	e.rt.running(service("duplicati", "2.0"), runtime.HealthHealthy)
	e.rt.health("duplicati", runtime.HealthUnhealthy)
	e.rt.running(service("old-cron", "1"), runtime.HealthHealthy)
	e.rt.crash("old-cron")
	for range 10 {
		r := e.round()
		if len(r.Services) != 1 {
			t.Fatalf("round decided for %d services, want only the definition's api", len(r.Services))
		}
	}
	if calls := e.rt.takeCalls(); len(calls) != 0 {
		t.Errorf("calls = %v, want none", calls)
	}
}

func TestWatchdog_runOnce_NothingPublished(t *testing.T) {
	e := newEnv(t, defaultPolicy, nil)
	r := e.round()
	if r.Result != RoundNoDefinition || len(r.Services) != 0 {
		t.Errorf("round = %+v, want no definition", r)
	}
	if got := hostlock.Holder(e.dir); got != "" {
		t.Errorf("lock left held by %q", got)
	}
}

// A round that cannot look counts nothing.
func TestWatchdog_runOnce_RuntimeError(t *testing.T) {
	d := newDefinition(t, "v2", "api")
	e := newEnv(t, defaultPolicy, d)
	e.rt.crash("api")
	e.round()
	e.rt.statusErr = errBoom
	for range 5 {
		if r := e.round(); r.Result != RoundError || !strings.Contains(r.Detail, "boom") {
			t.Fatalf("round = %+v, want an error round", r)
		}
	}
	e.rt.statusErr = nil
	if got := decision(t, e.round(), "api"); got.Strike != 2 {
		t.Errorf("strike after error rounds = %d, want 2 (error rounds count nothing)", got.Strike)
	}
	if n := testutil.ToFloat64(e.w.m.rounds.WithLabelValues("error", "runtime")); n != 5 {
		t.Errorf("rounds_total{error,runtime} = %v, want 5", n)
	}
}

// A deploy publishing a new spec resets the service's record.
func TestWatchdog_runOnce_NewDefinitionStartsOver(t *testing.T) {
	d1 := newDefinition(t, "v1", "api", "gateway")
	e := newEnv(t, defaultPolicy, d1)
	e.rt.crash("api")
	e.round()
	e.round()
	e.round()
	d2 := newDefinition(t, "v2", "api")
	if _, err := e.store.Publish(d2); err != nil {
		t.Fatal(err)
	}
	e.rt.runAll(d2)
	r := e.round()
	if len(r.Services) != 1 || decision(t, r, "api").Kind != KindOK || r.Version != "v2" {
		t.Fatalf("round = %+v, want v2's api ok only", r)
	}
	if st := e.w.Status(); len(st.Services) != 1 || st.Services[0].Name != "api" {
		t.Errorf("status services = %+v, want gateway (gone from the definition) dropped", st.Services)
	}
}

func TestWatchdog_Maintenance(t *testing.T) {
	d := newDefinition(t, "v2", "api")
	e := newEnv(t, defaultPolicy, d)
	if _, err := e.w.SetMaintenance(0, "x", ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("SetMaintenance(0) = %v, want ErrInvalid", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, MaintenanceFile)); !os.IsNotExist(err) {
		t.Fatalf("a refused request wrote the file: %v", err)
	}
	m, err := e.w.SetMaintenance(30*time.Minute, "db optimize", "alice")
	if err != nil {
		t.Fatal(err)
	}
	e.rt.crash("api")
	// The lock is not even tried during maintenance: a deploy is never
	// delayed by a paused watchdog.
	deploy := e.otherLock("deploy: v3")
	for range 10 {
		r := e.round()
		if r.Result != RoundSkippedMaintenance || !strings.Contains(r.Detail, "db optimize") {
			t.Fatalf("round = %s %q, want skipped for maintenance", r.Result, r.Detail)
		}
		if got := decision(t, r, "api"); got.Kind != KindSkipMaintenance {
			t.Fatalf("api: %s, want skip-maintenance", got.Kind)
		}
	}
	_ = deploy.Unlock()
	st := e.w.Status()
	if st.Maintenance == nil || st.Maintenance.Reason != "db optimize" || !st.Maintenance.Until.Equal(m.Until) {
		t.Errorf("status maintenance = %+v", st.Maintenance)
	}
	if api := st.Services[0]; api.State != StateFailing || api.Strikes != 0 || !strings.Contains(api.Reason, "paused") {
		t.Errorf("api during maintenance = %+v, want failing, 0 strikes, paused", api)
	}
	if calls := e.rt.takeCalls(); len(calls) != 0 {
		t.Fatalf("healed during maintenance: %v", calls)
	}
	if n := testutil.ToFloat64(e.w.m.maintenance); n != 1 {
		t.Errorf("maintenance gauge = %v, want 1", n)
	}

	// It survives an agent restart.
	e.start()
	if got := e.w.Maintenance(); got == nil || got.Reason != "db optimize" {
		t.Fatalf("after restart maintenance = %+v, want carried over", got)
	}
	if r := e.round(); r.Result != RoundSkippedMaintenance {
		t.Fatalf("after restart round = %s, want skipped", r.Result)
	}

	// It ends by itself at Until (the clock is at t0+11m; Until t0+30m).
	e.clock.Advance(m.Until.Sub(e.clock.Now()) - e.w.Policy().Interval)
	r := e.round()
	if r.Result != RoundChecked {
		t.Fatalf("round at Until = %s, want checked: maintenance expired", r.Result)
	}
	if got := decision(t, r, "api"); got.Kind != KindStrike || got.Strike != 1 {
		t.Errorf("first round after maintenance: %s %d, want strike 1 (nothing carried over)", got.Kind, got.Strike)
	}
	if _, err := os.Stat(filepath.Join(e.dir, MaintenanceFile)); !os.IsNotExist(err) {
		t.Errorf("maintenance file after expiry: %v, want removed", err)
	}
	if e.w.Status().Maintenance != nil {
		t.Error("status still shows maintenance after expiry")
	}
	if got := e.logs.lines(map[string]any{"msg": "maintenance mode expired; healing resumes"}); len(got) != 1 {
		t.Errorf("expiry log lines: %d, want 1", len(got))
	}
}

func TestWatchdog_EndMaintenance(t *testing.T) {
	d := newDefinition(t, "v2", "api")
	e := newEnv(t, defaultPolicy, d)
	if ended, err := e.w.EndMaintenance("bob"); ended != nil || err != nil {
		t.Fatalf("ending when none: %v, %v; want nil, nil", ended, err)
	}
	if _, err := e.w.SetMaintenance(time.Hour, "backup", "alice"); err != nil {
		t.Fatal(err)
	}
	ended, err := e.w.EndMaintenance("bob")
	if err != nil || ended == nil || ended.Reason != "backup" {
		t.Fatalf("EndMaintenance = %+v, %v", ended, err)
	}
	if e.round().Result != RoundChecked {
		t.Error("round after off: not checked")
	}
	e.start()
	if e.w.Maintenance() != nil {
		t.Error("maintenance came back after a restart")
	}
}

// The loop runs a round every interval on the injected clock, and Close
// stops it.
func TestWatchdog_Start(t *testing.T) {
	d := newDefinition(t, "v2", "api")
	e := newEnv(t, defaultPolicy, d)
	e.w.Start()
	e.w.Start() // idempotent
	if !e.w.Status().Enabled {
		t.Error("not enabled after Start")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if !e.w.Status().LastRound.IsZero() {
		t.Fatal("a round ran before one interval")
	}
	e.clock.Advance(time.Minute)
	waitFor(t, func() bool { return !e.w.Status().LastRound.IsZero() })
	if got := e.w.Status().LastResult; !strings.Contains(got, "checked 1 services of v2: 1 ok") {
		t.Errorf("last result %q", got)
	}
	if err := e.w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.w.Close(); err != nil {
		t.Fatal(err)
	}
	if e.w.Status().Enabled {
		t.Error("enabled after Close")
	}
}

// panickyRuntime panics in Status.
type panickyRuntime struct{ *fakeRuntime }

func (panickyRuntime) Status(context.Context) ([]runtime.ServiceStatus, error) { panic("bad runtime") }

// A panicking round is logged and the loop carries on.
func TestWatchdog_loop_RecoversPanics(t *testing.T) {
	d := newDefinition(t, "v2", "api")
	e := newEnv(t, defaultPolicy, d)
	var logs syncBuffer
	w, err := New(Config{Definitions: e.store, Runtime: panickyRuntime{e.rt}, Lock: e.lock, StateDir: e.dir,
		Clock: e.clock, Logger: newJSONLogger(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	w.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 2 {
		if err := e.clock.BlockUntilContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		waitFor(t, func() bool { return len(logs.lines(map[string]any{"msg": "watchdog round panicked"})) == i+1 })
	}
	if got := hostlock.Holder(e.dir); got != "" {
		t.Errorf("a panicking round left the lock held by %q", got)
	}
}

// waitFor polls cond until it holds, failing after a generous deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestRound_Summary(t *testing.T) {
	tests := []struct {
		name string
		r    Round
		want string
	}{
		{"locked", Round{Result: RoundSkippedLocked, Detail: "deploy: v3 by ci"}, "skipped: host lock held by deploy: v3 by ci"},
		{"error", Round{Result: RoundError, Detail: "runtime status: boom"}, "error: runtime status: boom"},
		{"nothing published", Round{Result: RoundNoDefinition}, "no definition published"},
		{"checked", Round{Result: RoundChecked, Version: "v2", Services: []ServiceDecision{
			{Decision: Decision{Kind: KindOK}}, {Decision: Decision{Kind: KindOK}}, {Decision: Decision{Kind: KindStrike}},
		}}, "checked 3 services of v2: 2 ok, 1 strike"},
	}
	for _, tc := range tests {
		if got := tc.r.Summary(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The definition the store hands out is what gets started, byte for byte.
func TestWatchdog_runOnce_StartsTheStoredSpec(t *testing.T) {
	d := newDefinition(t, "v2", "api")
	e := newEnv(t, Policy{Interval: time.Minute, FailuresBeforeHeal: 1}, d)
	e.rt.crash("api")
	var started []definition.Service
	e.rt.during = func(call string) {
		if strings.HasPrefix(call, "start") {
			cur, _ := e.store.Current()
			started = append(started, cur.Services[0])
		}
	}
	refs := e.refsBytes()
	e.round()
	sts, _ := e.rt.Status(context.Background())
	var runningSpec string
	for _, s := range sts {
		if s.Running() {
			runningSpec = s.SpecHash
		}
	}
	if len(started) != 1 || runningSpec != d.Services[0].SpecHash() {
		t.Errorf("started %d, running spec %.12s, want the published spec %.12s", len(started), runningSpec, d.Services[0].SpecHash())
	}
	if !bytes.Equal(refs, e.refsBytes()) {
		t.Error("refs changed")
	}
}

package watchdog

import (
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

// inst builds a runtime status of svc's spec in state with health h.
func inst(svc definition.Service, state runtime.State, h runtime.HealthStatus) runtime.ServiceStatus {
	spec := svc.SpecHash()
	s := runtime.ServiceStatus{Name: svc.Name, ID: instanceID(svc.Name, spec), SpecHash: spec, Version: svc.Version,
		State: state, StartedAt: t0.Add(-time.Hour), Health: runtime.Health{Status: h}}
	switch state {
	case runtime.StateExited:
		s.ExitCode, s.Signal, s.FinishedAt = 137, "SIGKILL", t0.Add(-time.Minute)
	case runtime.StateStopped:
		s.ExitCode, s.FinishedAt = 0, t0.Add(-time.Minute)
	}
	if h == runtime.HealthUnhealthy {
		s.Health.FailingStreak = 3
		s.Health.Log = []runtime.CheckResult{{ExitCode: 503, Output: "draining"}}
	}
	return s
}

func TestDecide(t *testing.T) {
	p := Policy{Interval: time.Minute, FailuresBeforeHeal: 4}.WithDefaults()
	api := service("api", "v2")
	spec := api.SpecHash()
	apiV1 := service("api", "v1")
	apiOtherEnv := service("api", "v2")
	apiOtherEnv.Environment = map[string]string{definition.EnvVersion: "v2", definition.EnvService: "api", "MYTHEX_APP_SERVICE": "api", "FEATURE": "on"}
	gateway := service("gateway", "v2")
	seen := func(r Record) Record { r.Name, r.SpecHash = "api", spec; return r }
	healthy := []runtime.ServiceStatus{inst(api, runtime.StateRunning, runtime.HealthHealthy)}
	dead := []runtime.ServiceStatus{inst(api, runtime.StateExited, runtime.HealthNone)}
	maint := &Maintenance{Reason: "db optimize", Since: t0.Add(-time.Minute), Until: t0.Add(30 * time.Minute)}
	const holder = "deploy: v2 by ci"

	tests := []struct {
		name string
		p    Policy
		rec  Record
		obs  Observation
		// want
		kind      Kind
		cause     Cause
		strike    int
		stopFirst bool
		check     func(t *testing.T, rec Record, d Decision)
	}{
		{
			name: "healthy instance of the spec is ok and resets strikes",
			rec:  seen(Record{Strikes: 3, State: StateFailing}),
			obs:  Observation{Instances: healthy},
			kind: KindOK, cause: CauseHealthy,
			check: func(t *testing.T, rec Record, _ Decision) {
				if rec.Strikes != 0 || rec.State != StateOK || rec.OKStreak != 1 {
					t.Errorf("record = %+v, want 0 strikes, ok, ok streak 1", rec)
				}
			},
		},
		{
			name: "running without a health check is ok",
			obs:  Observation{Instances: []runtime.ServiceStatus{inst(api, runtime.StateRunning, runtime.HealthNone)}},
			kind: KindOK, cause: CauseHealthy,
		},
		{
			name: "first failure is a strike, never a heal",
			obs:  Observation{Instances: dead},
			kind: KindStrike, cause: CauseExited, strike: 1,
			check: func(t *testing.T, rec Record, d Decision) {
				if rec.State != StateFailing || !strings.Contains(rec.Reason, "strike 1 of 4") || !strings.Contains(d.Detail, "SIGKILL") {
					t.Errorf("record = %+v, detail %q: want failing, strike 1 of 4, SIGKILL named", rec, d.Detail)
				}
			},
		},
		{
			name: "third failure of four is still only a strike",
			rec:  seen(Record{Strikes: 2, State: StateFailing}),
			obs:  Observation{Instances: dead},
			kind: KindStrike, cause: CauseExited, strike: 3,
		},
		{
			name: "fourth consecutive failure heals",
			rec:  seen(Record{Strikes: 3, State: StateFailing}),
			obs:  Observation{Instances: dead},
			kind: KindHeal, cause: CauseExited, strike: 4,
			check: func(t *testing.T, rec Record, d Decision) {
				if rec.Strikes != 0 || rec.HealsInRow != 1 || rec.Heals != 1 || rec.State != StateHealing || !rec.LastHeal.Equal(t0) {
					t.Errorf("record = %+v, want strikes reset, first heal at t0, healing", rec)
				}
				if !d.NextHeal.Equal(t0) {
					t.Errorf("NextHeal = %v, want t0: a first heal sets no backoff", d.NextHeal)
				}
			},
		},
		{
			name: "with failures_before_heal 1 (the write-up's old watchdog) the first failure heals",
			p:    Policy{Interval: time.Minute, FailuresBeforeHeal: 1}.WithDefaults(),
			obs:  Observation{Instances: dead},
			kind: KindHeal, cause: CauseExited, strike: 1,
		},
		{
			name: "unhealthy fourth strike stops the instance before starting it",
			rec:  seen(Record{Strikes: 3, State: StateFailing}),
			obs:  Observation{Instances: []runtime.ServiceStatus{inst(api, runtime.StateRunning, runtime.HealthUnhealthy)}},
			kind: KindHeal, cause: CauseUnhealthy, strike: 4, stopFirst: true,
		},
		{
			name: "unhealthy is a strike naming the last check",
			obs:  Observation{Instances: []runtime.ServiceStatus{inst(api, runtime.StateRunning, runtime.HealthUnhealthy)}},
			kind: KindStrike, cause: CauseUnhealthy, strike: 1,
			check: func(t *testing.T, _ Record, d Decision) {
				if !strings.Contains(d.Detail, "503") || !strings.Contains(d.Detail, "draining") {
					t.Errorf("detail %q: want the last check's status and output", d.Detail)
				}
			},
		},
		{
			name: "starting inside the start period holds strikes without adding",
			rec:  seen(Record{Strikes: 2, State: StateFailing}),
			obs:  Observation{Instances: []runtime.ServiceStatus{inst(api, runtime.StateRunning, runtime.HealthStarting)}},
			kind: KindWait, cause: CauseStarting, strike: 2,
			check: func(t *testing.T, rec Record, _ Decision) {
				if rec.Strikes != 2 || rec.State != StateStarting {
					t.Errorf("record = %+v, want 2 strikes kept, starting", rec)
				}
			},
		},
		{
			name: "platform restarting the spec is not a strike",
			rec:  seen(Record{Strikes: 2, State: StateFailing}),
			obs:  Observation{Instances: []runtime.ServiceStatus{inst(api, runtime.StateRestarting, runtime.HealthNone)}},
			kind: KindWait, cause: CausePlatformRestarting, strike: 2,
			check: func(t *testing.T, rec Record, _ Decision) {
				if rec.State != StateRestarting {
					t.Errorf("state = %s, want restarting", rec.State)
				}
			},
		},
		{
			name: "platform restarting another spec is drift",
			obs:  Observation{Instances: []runtime.ServiceStatus{inst(apiV1, runtime.StateRestarting, runtime.HealthNone)}},
			kind: KindDrift, cause: CauseDriftVersion, strike: 1,
		},
		{
			name: "lock held skips the would-be fourth strike and drops the strikes",
			rec:  seen(Record{Strikes: 3, State: StateFailing}),
			obs:  Observation{Instances: dead, LockHeldBy: holder},
			kind: KindSkipLocked, cause: CauseLockHeld,
			check: func(t *testing.T, rec Record, d Decision) {
				if rec.Strikes != 0 || rec.State != StateFailing || !strings.Contains(rec.Reason, "deploy: v2 by ci") {
					t.Errorf("record = %+v, want strikes dropped, state kept, holder named", rec)
				}
			},
		},
		{
			name: "maintenance looks, reports, counts nothing",
			rec:  seen(Record{Strikes: 3, State: StateFailing}),
			obs:  Observation{Instances: dead, Maintenance: maint},
			kind: KindSkipMaintenance, cause: CauseMaintenance,
			check: func(t *testing.T, rec Record, d Decision) {
				if rec.Strikes != 0 || rec.State != StateFailing || !strings.Contains(rec.Reason, "maintenance") || !strings.Contains(rec.Reason, "SIGKILL") {
					t.Errorf("record = %+v, want 0 strikes, failing, paused and why", rec)
				}
			},
		},
		{
			name: "maintenance wins over a held lock",
			obs:  Observation{Instances: dead, Maintenance: maint, LockHeldBy: holder},
			kind: KindSkipMaintenance, cause: CauseMaintenance,
		},
		{
			name: "expired maintenance pauses nothing",
			rec:  seen(Record{Strikes: 3, State: StateFailing}),
			obs:  Observation{Instances: dead, Maintenance: &Maintenance{Reason: "x", Until: t0}},
			kind: KindHeal, cause: CauseExited, strike: 4,
		},
		{
			name: "another version running is drift, a strike",
			obs:  Observation{Instances: []runtime.ServiceStatus{inst(apiV1, runtime.StateRunning, runtime.HealthHealthy)}},
			kind: KindDrift, cause: CauseDriftVersion, strike: 1,
			check: func(t *testing.T, rec Record, d Decision) {
				if rec.State != StateDrifted || !strings.Contains(d.Detail, "v1") || !strings.Contains(d.Detail, "v2") {
					t.Errorf("record %+v detail %q: want drifted naming both versions", rec, d.Detail)
				}
			},
		},
		{
			name: "same version with another environment is spec drift",
			obs:  Observation{Instances: []runtime.ServiceStatus{inst(apiOtherEnv, runtime.StateRunning, runtime.HealthHealthy)}},
			kind: KindDrift, cause: CauseDriftSpec, strike: 1,
		},
		{
			name: "fourth drift heals by replacing the instance",
			rec:  seen(Record{Strikes: 3, State: StateDrifted}),
			obs:  Observation{Instances: []runtime.ServiceStatus{inst(apiV1, runtime.StateRunning, runtime.HealthHealthy)}},
			kind: KindHeal, cause: CauseDriftVersion, strike: 4, stopFirst: true,
		},
		{
			name: "a new spec in the definition starts a new record",
			rec:  Record{Name: "api", SpecHash: apiV1.SpecHash(), Strikes: 3, HealsInRow: 5, NextHeal: t0.Add(time.Hour)},
			obs:  Observation{Instances: dead},
			kind: KindStrike, cause: CauseExited, strike: 1,
			check: func(t *testing.T, rec Record, _ Decision) {
				if rec.HealsInRow != 0 || !rec.NextHeal.IsZero() {
					t.Errorf("record = %+v: the old spec's backoff must not carry over", rec)
				}
			},
		},
		{
			name: "stopped on request and not started again is a strike",
			obs:  Observation{Instances: []runtime.ServiceStatus{inst(api, runtime.StateStopped, runtime.HealthNone)}},
			kind: KindStrike, cause: CauseStopped, strike: 1,
		},
		{
			name: "no instance at all is a strike",
			kind: KindStrike, cause: CauseNotRunning, strike: 1,
		},
		{
			name: "only the old version's exited instance: not running",
			obs:  Observation{Instances: []runtime.ServiceStatus{inst(apiV1, runtime.StateExited, runtime.HealthNone)}},
			kind: KindStrike, cause: CauseNotRunning, strike: 1,
			check: func(t *testing.T, _ Record, d Decision) {
				if !strings.Contains(d.Detail, "v1") {
					t.Errorf("detail %q: want the old instance named", d.Detail)
				}
			},
		},
		{
			name: "other services' instances do not count",
			obs:  Observation{Instances: []runtime.ServiceStatus{inst(gateway, runtime.StateRunning, runtime.HealthHealthy)}},
			kind: KindStrike, cause: CauseNotRunning, strike: 1,
		},
		{
			name: "second heal in a row: crash-looping, backoff set",
			rec:  seen(Record{Strikes: 3, HealsInRow: 1, NextHeal: t0.Add(-time.Minute), State: StateFailing}),
			obs:  Observation{Instances: dead},
			kind: KindHeal, cause: CauseExited, strike: 4,
			check: func(t *testing.T, rec Record, d Decision) {
				if rec.State != StateCrashLooping || rec.HealsInRow != 2 || !d.NextHeal.Equal(t0.Add(8*time.Minute)) {
					t.Errorf("record = %+v next %v: want crash-looping, 2 in a row, next heal after 2·K·W = 8m", rec, d.NextHeal)
				}
			},
		},
		{
			name: "crash-looping before its backoff ran out: no heal",
			rec:  seen(Record{Strikes: 3, HealsInRow: 2, NextHeal: t0.Add(time.Minute), State: StateCrashLooping}),
			obs:  Observation{Instances: dead},
			kind: KindBackoff, cause: CauseExited, strike: 4,
			check: func(t *testing.T, rec Record, d Decision) {
				if rec.State != StateCrashLooping || rec.Strikes != 4 || !d.NextHeal.Equal(t0.Add(time.Minute)) {
					t.Errorf("record = %+v: want crash-looping at 4 strikes until t0+1m", rec)
				}
			},
		},
		{
			name: "strikes stay at K while backing off",
			rec:  seen(Record{Strikes: 4, HealsInRow: 2, NextHeal: t0.Add(time.Minute), State: StateCrashLooping}),
			obs:  Observation{Instances: dead},
			kind: KindBackoff, cause: CauseExited, strike: 4,
		},
		{
			name: "backoff ran out: heal, the backoff doubles",
			rec:  seen(Record{Strikes: 4, HealsInRow: 2, NextHeal: t0, State: StateCrashLooping}),
			obs:  Observation{Instances: dead},
			kind: KindHeal, cause: CauseExited, strike: 4,
			check: func(t *testing.T, rec Record, d Decision) {
				if rec.HealsInRow != 3 || !d.NextHeal.Equal(t0.Add(16*time.Minute)) {
					t.Errorf("record = %+v next %v: want heal 3 in a row, next after 16m", rec, d.NextHeal)
				}
			},
		},
		{
			name: "healthy while crash-looping keeps the loop until K healthy rounds",
			rec:  seen(Record{HealsInRow: 2, OKStreak: 1, NextHeal: t0.Add(time.Hour)}),
			obs:  Observation{Instances: healthy},
			kind: KindOK, cause: CauseHealthy,
			check: func(t *testing.T, rec Record, _ Decision) {
				if rec.HealsInRow != 2 || rec.OKStreak != 2 {
					t.Errorf("record = %+v: want still 2 heals in a row after 2 healthy rounds", rec)
				}
			},
		},
		{
			name: "K healthy rounds in a row end the crash loop",
			rec:  seen(Record{HealsInRow: 2, OKStreak: 3, NextHeal: t0.Add(time.Hour)}),
			obs:  Observation{Instances: healthy},
			kind: KindOK, cause: CauseHealthy,
			check: func(t *testing.T, rec Record, _ Decision) {
				if rec.HealsInRow != 0 || !rec.NextHeal.IsZero() {
					t.Errorf("record = %+v: want the loop forgotten", rec)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pol := p
			if tc.p.Interval != 0 {
				pol = tc.p
			}
			obs := tc.obs
			obs.Now, obs.Service = t0, api
			rec, d := Decide(tc.rec, obs, pol)
			if d.Kind != tc.kind || d.Cause != tc.cause {
				t.Fatalf("decision = %s/%s (%s), want %s/%s", d.Kind, d.Cause, d.Detail, tc.kind, tc.cause)
			}
			if d.Strike != tc.strike || d.StopFirst != tc.stopFirst || d.Of != pol.FailuresBeforeHeal {
				t.Errorf("strike %d of %d stopFirst %v, want %d of %d stopFirst %v", d.Strike, d.Of, d.StopFirst, tc.strike, pol.FailuresBeforeHeal, tc.stopFirst)
			}
			if rec.Name != "api" || rec.SpecHash != spec {
				t.Errorf("record is about %s/%.12s, want api/%.12s", rec.Name, rec.SpecHash, spec)
			}
			if tc.check != nil {
				tc.check(t, rec, d)
			}
		})
	}
}

// TestDecide_DrainWithoutLock is the write-up's problem 1 as a schedule: a
// deploy drains the gateway for drain.max (150s) — its health check fails on
// purpose — and, to show the patience alone suffices, the watchdog does not
// even see the host lock. Rounds come every 60s, the first just after the
// drain began (the worst case). With the old watchdog (heal on one failure)
// the gateway is restarted mid-drain; with four strikes it never is.
func TestDecide_DrainWithoutLock(t *testing.T) {
	const drainMax = 150 * time.Second
	gw := service("gateway", "v1")
	gwV2 := service("gateway", "v2")
	tests := []struct {
		name       string
		k          int
		wantHealed bool
	}{
		{"before: failures_before_heal 1 heals mid-drain", 1, true},
		{"after: failures_before_heal 4 never heals a drain", 4, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{Interval: 60 * time.Second, FailuresBeforeHeal: tc.k}.WithDefaults()
			drainStart := t0
			var rec Record
			heals := 0
			// The deploy publishes v2 once the drain is over; until then the
			// definition is v1 and v1 is draining.
			for at := drainStart.Add(time.Millisecond); at.Before(drainStart.Add(10 * time.Minute)); at = at.Add(p.Interval) {
				svc, obs := gw, []runtime.ServiceStatus{inst(gw, runtime.StateRunning, runtime.HealthUnhealthy)}
				if !at.Before(drainStart.Add(drainMax)) {
					svc, obs = gwV2, []runtime.ServiceStatus{inst(gw, runtime.StateStopped, runtime.HealthNone), inst(gwV2, runtime.StateRunning, runtime.HealthHealthy)}
				}
				var d Decision
				rec, d = Decide(rec, Observation{Now: at, Service: svc, Instances: obs}, p)
				if d.Kind == KindHeal {
					heals++
				}
			}
			if (heals > 0) != tc.wantHealed {
				t.Errorf("heals during a %v drain with K=%d, W=60s: %d, want healed %v", drainMax, tc.k, heals, tc.wantHealed)
			}
		})
	}
}

func TestKind_String(t *testing.T) {
	tests := []struct {
		k    Kind
		want string
	}{
		{KindSkipLocked, "skip-locked"}, {KindSkipMaintenance, "skip-maintenance"}, {KindOK, "ok"}, {KindWait, "wait"},
		{KindStrike, "strike"}, {KindDrift, "drift"}, {KindHeal, "heal"}, {KindBackoff, "backoff"}, {Kind(99), "kind(99)"},
	}
	for _, tc := range tests {
		if got := tc.k.String(); got != tc.want {
			t.Errorf("Kind(%d).String() = %q, want %q", tc.k, got, tc.want)
		}
	}
}

func TestRecord_HealFailed(t *testing.T) {
	rec := Record{Name: "api", HealsInRow: 2, State: StateCrashLooping}.HealFailed(errBoom)
	if rec.LastHealError != "boom" || !strings.Contains(rec.Reason, "heal failed: boom") || rec.HealsInRow != 2 {
		t.Errorf("record = %+v, want the failure recorded and the heal still counted", rec)
	}
}

package publish

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/platform"
)

// reconcileOnce runs one reconcile round in the simulation.
func (e *env) reconcileOnce(t *testing.T) []Check {
	t.Helper()
	var checks []Check
	var err error
	e.drive(t, func(ctx context.Context) { checks, err = NewReconciler(e.gate).RunOnce(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	return checks
}

// reconcileUntil runs the reconciler every interval until some check rolls
// back or maxRounds rounds passed; it returns the rounds run and the rolling
// back check, if any.
func (e *env) reconcileUntil(t *testing.T, every time.Duration, maxRounds int) (int, *Check) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rounds := 0
	var hit *Check
	e.drive(t, func(context.Context) {
		_ = NewReconciler(e.gate).Run(ctx, every, func(cs []Check, err error) {
			if err != nil {
				t.Errorf("round %d: %v", rounds, err)
			}
			rounds++
			for i := range cs {
				if cs[i].Action == ActionRolledBack && hit == nil {
					hit = &cs[i]
					cancel()
				}
			}
			if rounds >= maxRounds {
				cancel()
			}
		})
	})
	return rounds, hit
}

// TestReconciler_LateCrash: with a short stable window the gate passes an app
// that crashes 12 s after each start (flyctl's blind spot); the reconciler
// catches it and rolls back to the last good release instead of leaving the
// app down, and records why.
func TestReconciler_LateCrash(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	for _, strategy := range []Strategy{StrategyInPlace, StrategyBlueGreen} {
		t.Run(string(strategy), func(t *testing.T) {
			e := newEnv(t, strategy == StrategyBlueGreen, Options{StableFor: 10 * time.Second})
			good := e.publish(t, req(imgGood))
			late := e.publish(t, req(imgLate))
			if late.Verdict.Status != StatusLive {
				t.Fatalf("gate verdict with a 10 s stable window = %v; want live (the blind spot this test needs)", late.Verdict)
			}
			rounds, hit := e.reconcileUntil(t, 30*time.Second, 3)
			if hit == nil || hit.Release != late.Release.ID {
				t.Fatalf("after %d reconcile rounds nothing was rolled back; want %s", rounds, late.Release.ID)
			}
			rel, err := e.store.Get(context.Background(), "api", late.Release.ID)
			if err != nil {
				t.Fatal(err)
			}
			if rel.Status != ReleaseRolledBack || rel.RolledBackTo != good.Release.ID || !strings.Contains(rel.Reason, "late failure found by the reconciler") {
				t.Errorf("release after the late failure = %s, to %q, reason %q", rel.Status, rel.RolledBackTo, rel.Reason)
			}
			checkAfterFrom(t, e, Result{Release: rel, Rollback: hit.Rollback}, good.Release, rel.UpdatedAt)
		})
	}
}

// TestReconciler_SlowLoopAcrossRounds: a crash every 40 s slips through any
// one round's looks; each round keeps its last look as the next round's
// baseline, so the second crash is a newer crash than the first: rolled back
// within two rounds after the first crash.
func TestReconciler_SlowLoopAcrossRounds(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	e := newEnv(t, false, Options{})
	e.publish(t, req(imgGood))
	slow := e.publish(t, req(imgSlowLoop))
	if slow.Verdict.Status != StatusLive {
		t.Fatalf("gate verdict = %v; want live (a 40 s loop outlasts the 30 s stable window)", slow.Verdict)
	}
	rounds, hit := e.reconcileUntil(t, 30*time.Second, 10)
	if hit == nil {
		t.Fatalf("not rolled back after %d rounds", rounds)
	}
	if rounds > 4 {
		t.Errorf("rolled back after %d rounds, want within 4 (first crash at ~40 s after live)", rounds)
	}
}

func TestReconciler_HealthyStaysLive(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	e := newEnv(t, true, Options{})
	good := e.publish(t, req(imgGood))
	n := len(e.p.Calls())
	e.clock.Advance(time.Minute)
	checks := e.reconcileOnce(t)
	if len(checks) != 1 || checks[0].Action != ActionNone || checks[0].Verdict.Status != StatusLive {
		t.Fatalf("checks = %+v", checks)
	}
	if c := e.p.Calls()[n:]; len(c) != 0 {
		t.Errorf("calls while checking a healthy release: %q", c)
	}
	rel, _ := e.store.Get(context.Background(), "api", good.Release.ID)
	if rel.Status != ReleaseLive || rel.LastLook == nil || rel.CheckedAt.IsZero() {
		t.Errorf("release after a check = %s, last look %v", rel.Status, rel.LastLook != nil)
	}
}

// TestReconciler_LateFailureWithoutGoodRelease: nothing to restore — the
// machines keep running (a crashing app beats a 404 for every page).
func TestReconciler_LateFailureWithoutGoodRelease(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	e := newEnv(t, false, Options{StableFor: 10 * time.Second})
	late := e.publish(t, req(imgLate))
	if late.Verdict.Status != StatusLive {
		t.Fatalf("verdict = %v, want live", late.Verdict)
	}
	e.clock.Advance(30 * time.Second)
	n := len(e.p.Calls())
	checks := e.reconcileOnce(t)
	if len(checks) != 1 || checks[0].Action != ActionFailed {
		t.Fatalf("checks = %+v, want failed", checks)
	}
	if c := e.p.Calls()[n:]; len(c) != 0 {
		t.Errorf("calls after a late failure with nothing to restore: %q (the app must not be taken down)", c)
	}
	rel, _ := e.store.Get(context.Background(), "api", late.Release.ID)
	if rel.Status != ReleaseFailed || !strings.Contains(rel.Reason, "left running") {
		t.Errorf("release = %s, %q", rel.Status, rel.Reason)
	}
}

// TestReconciler_FinishesUnknown: a publish judged unknown under 429s is
// finished once the control plane answers again.
func TestReconciler_FinishesUnknown(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	for _, tt := range []struct {
		name  string
		image string
		want  Action
		rel   ReleaseStatus
	}{
		{"healthy release is promoted", imgGood2, ActionPromoted, ReleaseLive},
		{"crashing release is rolled back", imgCrash, ActionRolledBack, ReleaseRolledBack},
	} {
		for _, strategy := range []Strategy{StrategyInPlace, StrategyBlueGreen} {
			t.Run(string(strategy)+"/"+tt.name, func(t *testing.T) {
				e := newEnv(t, strategy == StrategyBlueGreen, Options{Window: time.Minute})
				good := e.publish(t, req(imgGood))
				e.p.failGet = func(time.Time, string) error { return platform.ErrRateLimited }
				r := req(tt.image)
				r.Health.AppURL = "http://api.app.test/healthz"
				res := e.publish(t, r)
				if res.Verdict.Status == StatusFailed && tt.image == imgCrash && strategy == StrategyInPlace {
					// In place the crashing app fails its own health check: no
					// unknown to finish.
					return
				}
				if res.Verdict.Status != StatusUnknown {
					t.Fatalf("verdict under 429s = %v, want unknown", res.Verdict)
				}
				e.p.failGet = nil
				checks := e.reconcileOnce(t)
				if len(checks) != 1 || checks[0].Action != tt.want {
					t.Fatalf("checks = %+v, want %s", checks, tt.want)
				}
				rel, _ := e.store.Get(context.Background(), "api", res.Release.ID)
				if rel.Status != tt.rel {
					t.Errorf("release = %s, want %s", rel.Status, tt.rel)
				}
				checkAfter(t, e, Result{Release: rel, Rollback: checks[0].Rollback}, good.Release)
			})
		}
	}
}

// TestReconciler_RestoredReleaseJudgedByFailedReleasesCrashes: in place, v1
// goes live, v2 crash-loops and is rolled back to v1 on the same machine. The
// machine's event list still holds v2's crashes, all later than v1's own
// publish — the reconciler must judge the restored v1 from the platform's
// event that restored it, never from the crashes of the release it replaced.
// Before the fix v1 kept its first publish's t0 and was failed (and rolled
// back further) for v2's crash loop.
func TestReconciler_RestoredReleaseJudgedByFailedReleasesCrashes(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	// Looks 10 s apart: v2 crashes more than once before the gate sees it.
	e := newEnv(t, false, Options{LookInterval: 10 * time.Second})
	e.p.capacity = 50 // the machine's list keeps v2's crashes past the restore, as the local platform's does
	good := e.publish(t, req(imgGood))
	bad := e.publish(t, req(imgFast))
	if bad.Release.Status != ReleaseRolledBack || bad.Release.RolledBackTo != good.Release.ID {
		t.Fatalf("crashing release = %s (to %q); want rolled back to %s", bad.Release.Status, bad.Release.RolledBackTo, good.Release.ID)
	}
	crashes := 0
	for _, id := range bad.Release.Machines {
		m, err := e.p.Get(context.Background(), "api", id)
		if err != nil {
			t.Fatal(err)
		}
		crashes += len(crashesSince(m.Events, good.Release.CreatedAt, platform.RestartAlways))
	}
	if crashes < 2 {
		t.Fatalf("the machines' events hold %d crashes since %s was published; the test needs v2's crash loop in them", crashes, good.Release.ID)
	}
	e.clock.Advance(time.Second)
	n := len(e.p.Calls())
	checks := e.reconcileOnce(t)
	if len(checks) != 1 || checks[0].Action != ActionNone || checks[0].Release != good.Release.ID ||
		checks[0].Verdict == nil || checks[0].Verdict.Status != StatusLive {
		t.Fatalf("reconcile after the rollback = %+v; want %s: none (verdict live)", checks, good.Release.ID)
	}
	if c := e.p.Calls()[n:]; len(c) != 0 {
		t.Errorf("calls while checking the restored release: %q", c)
	}
	cur, _, _ := e.store.Current(context.Background(), "api")
	if cur.ID != good.Release.ID || cur.Status != ReleaseLive {
		t.Errorf("current after reconcile = %s (%s); want %s live", cur.ID, cur.Status, good.Release.ID)
	}
}

// TestReconciler_UnsettledRollbackIsNotYet: the update back to v1 lags past
// --restore-timeout, so the rollback of v2 ends unsettled with the machine
// still on v2. The reconciler's check of v1 (still the current release) is
// "not yet" while the machine runs v2 — never a failure of v1 — and judges v1
// from the write that restored it once it lands.
func TestReconciler_UnsettledRollbackIsNotYet(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	e := newEnv(t, false, Options{LookInterval: 10 * time.Second, RestoreTimeout: 5 * time.Second})
	e.p.capacity = 50
	good := e.publish(t, req(imgGood))
	e.mu.Lock()
	e.onEvent = func(ev Event) {
		if strings.Contains(ev.Message, "rolling back") {
			e.p.mu.Lock()
			e.p.updateLag = 2 * time.Minute // the v2 process drains for 2 min
			e.p.mu.Unlock()
		}
	}
	e.mu.Unlock()
	bad := e.publish(t, req(imgFast))
	e.mu.Lock()
	e.onEvent = nil
	e.mu.Unlock()
	if bad.Rollback == nil || bad.Rollback.Error == "" {
		t.Fatalf("rollback = %+v; want one that did not settle within the restore timeout", bad.Rollback)
	}
	checks := e.reconcileOnce(t)
	if len(checks) != 1 || checks[0].Release != good.Release.ID || checks[0].Action != ActionNone ||
		checks[0].Verdict == nil || checks[0].Verdict.Status == StatusFailed {
		t.Fatalf("reconcile while the machine still runs v2 = %+v; want %s not yet (none, not failed)", checks, good.Release.ID)
	}
	e.clock.Advance(2 * time.Minute)
	checks = e.reconcileOnce(t)
	if len(checks) != 1 || checks[0].Action != ActionNone || checks[0].Verdict == nil || checks[0].Verdict.Status != StatusLive {
		t.Fatalf("reconcile once the rollback landed = %+v; want %s: none (verdict live)", checks, good.Release.ID)
	}
}

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

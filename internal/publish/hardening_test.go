package publish

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/platform"
)

// Regression tests for the publish gate's hardening (clock skew, slow and
// refused control planes, interruptions, broken releases). Each is named
// after the defect it pins.

const (
	img500      = "app:answers-500"  // runs, answers its health check with 500
	imgBoot503  = "app:boot-503-20s" // answers 503 for 20 s, then 200
	imgBootSlow = "app:refuses-20s"  // refuses connections for 20 s, then 200
	imgKill     = "app:sigkill-2.5s" // killed by SIGKILL 2.5 s after every boot
	imgOOM      = "app:oom-2.5s"     // OOM-killed 2.5 s after every boot
)

func init() {
	behaviors[img500] = behavior{status: 500}
	behaviors[imgBoot503] = behavior{bootTime: 20 * time.Second, bootStatus: 503}
	behaviors[imgBootSlow] = behavior{bootTime: 20 * time.Second}
	behaviors[imgKill] = behavior{crashAfter: 2500 * time.Millisecond, signal: 9}
	behaviors[imgOOM] = behavior{crashAfter: 2500 * time.Millisecond, signal: 9, oom: true}
}

// TestGate_ClockSkewDoesNotSwitchOffTheStableWindow: the platform's clock
// off ours (25 s and 10 min behind, 10 min ahead) changes nothing: a
// release crashing every 12 s still fails, a healthy one still goes live.
func TestGate_ClockSkewDoesNotSwitchOffTheStableWindow(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	for _, skew := range []time.Duration{-25 * time.Second, -10 * time.Minute, 10 * time.Minute} {
		for _, strategy := range []Strategy{StrategyInPlace, StrategyBlueGreen} {
			t.Run(string(strategy)+"/"+skew.String(), func(t *testing.T) {
				e := newEnv(t, strategy == StrategyBlueGreen, Options{})
				e.p.skew = skew
				good := e.publish(t, req(imgGood))
				if good.Verdict.Status != StatusLive {
					t.Fatalf("healthy release under skew %s = %v, want live", skew, good.Verdict)
				}
				late := e.publish(t, req(imgLate))
				if late.Verdict.Status != StatusFailed || late.Release.Status != ReleaseRolledBack {
					t.Fatalf("crash every 12 s under skew %s = %v, release %s; want failed and rolled back", skew, late.Verdict, late.Release.Status)
				}
				checkAfter(t, e, late, good.Release)
			})
		}
	}
}

// TestReconciler_ClockSkewDoesNotCountUptimeFromThePlatformClock: with the
// platform 10 min behind, a release that slipped through the gate (a 10 s
// stable window) and crashes every 12 s is rolled back by the reconciler,
// not reported as "stayed up for 10m".
func TestReconciler_ClockSkewDoesNotCountUptimeFromThePlatformClock(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	e := newEnv(t, false, Options{StableFor: 10 * time.Second})
	e.p.skew = -10 * time.Minute
	e.publish(t, req(imgGood))
	late := e.publish(t, req(imgLate))
	if late.Verdict.Status != StatusLive {
		t.Fatalf("gate verdict = %v; want live (the blind spot this test needs)", late.Verdict)
	}
	rounds, hit := e.reconcileUntil(t, 30*time.Second, 3)
	if hit == nil || hit.Release != late.Release.ID {
		t.Fatalf("after %d rounds under a 10 min skew nothing was rolled back", rounds)
	}
}

// TestGate_RefusedUpdateIsNotYetNeverFailed: a 429 on the update call is
// retried; a release the platform keeps refusing is unknown (still on the
// old release), never failed, and nothing is rolled back.
func TestGate_RefusedUpdateIsNotYetNeverFailed(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	t.Run("refused once, retried, live", func(t *testing.T) {
		e := newEnv(t, false, Options{})
		e.publish(t, req(imgGood))
		e.p.refuseUpdates = 1
		res := e.publish(t, req(imgGood2))
		if res.Verdict.Status != StatusLive || res.Rollback != nil {
			t.Fatalf("after one 429 on the update: %v, rollback %+v; want live", res.Verdict, res.Rollback)
		}
	})
	t.Run("always refused, unknown, nothing rolled back", func(t *testing.T) {
		e := newEnv(t, false, Options{Window: time.Minute})
		good := e.publish(t, req(imgGood))
		e.p.refuseUpdates = 1 << 20
		n := len(e.p.Calls())
		res := e.publish(t, req(imgGood2))
		if res.Verdict.Status != StatusUnknown || res.Release.Status != ReleasePending || res.Rollback != nil {
			t.Fatalf("update always refused: %v, release %s, rollback %+v; want unknown, pending, none", res.Verdict, res.Release.Status, res.Rollback)
		}
		if r := strings.Join(res.Verdict.Reasons, " "); !strings.Contains(r, "has not applied the update") || strings.Contains(r, "not the published") {
			t.Errorf("reasons %q", r)
		}
		for _, c := range e.p.Calls()[n:] {
			if !strings.HasPrefix(c, "refused update") {
				t.Errorf("call %q after refused updates (nothing may change)", c)
			}
		}
		if cur, _, _ := e.store.Current(context.Background(), "api"); cur.ID != good.Release.ID {
			t.Errorf("current = %s, want %s", cur.ID, good.Release.ID)
		}
	})
}

// TestGate_SlowUpdateIsJudgedOnceSettled: the update's call times out while
// the old process drains for 8 s; the machine still on the old release is
// "not yet". A good release goes live; a crashing one fails for its crashes
// and the rollback — itself slower than the call timeout — completes.
func TestGate_SlowUpdateIsJudgedOnceSettled(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	for _, tc := range []struct {
		image string
		want  Status
	}{{imgGood2, StatusLive}, {imgCrash, StatusFailed}} {
		t.Run(tc.image, func(t *testing.T) {
			e := newEnv(t, false, Options{CallTimeout: time.Second})
			good := e.publish(t, req(imgGood))
			e.p.updateLag = 8 * time.Second
			res := e.publish(t, req(tc.image))
			if res.Verdict.Status != tc.want {
				t.Fatalf("slow update of %s = %v, want %s", tc.image, res.Verdict, tc.want)
			}
			if r := strings.Join(res.Verdict.Reasons, " "); strings.Contains(r, "not the published") {
				t.Errorf("failed for still running the old release: %q", r)
			}
			if tc.want == StatusFailed {
				if res.Rollback == nil || res.Rollback.Error != "" || res.Release.Status != ReleaseRolledBack {
					t.Fatalf("rollback = %+v, release %s; want a completed rollback", res.Rollback, res.Release.Status)
				}
				m, _ := e.p.Get(context.Background(), "api", "m1")
				if m.Release() != good.Release.ID {
					t.Errorf("after the rollback m1 runs %s, want %s", m.Release(), good.Release.ID)
				}
			}
		})
	}
}

// TestReconciler_TwoCrashesFarApartAreNotALoop: two single kills 66 s
// apart, the release stable in between, are not a crash loop; two kills
// 5 s apart are.
func TestReconciler_TwoCrashesFarApartAreNotALoop(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	for _, tc := range []struct {
		gap      time.Duration
		rollback bool
	}{{66 * time.Second, false}, {5 * time.Second, true}} {
		t.Run(tc.gap.String(), func(t *testing.T) {
			e := newEnv(t, false, Options{})
			e.publish(t, req(imgGood))
			cur := e.publish(t, req(imgGood2))
			if cur.Verdict.Status != StatusLive {
				t.Fatal(cur.Verdict)
			}
			e.clock.Advance(10 * time.Second)
			e.p.kill("m1")
			checks := e.reconcileOnce(t)
			if len(checks) != 1 || checks[0].Action != ActionNone {
				t.Fatalf("round after one kill: %+v", checks)
			}
			if d := tc.gap - e.clock.Since(e.killedAt(t, "m1")); d > 0 {
				e.clock.Advance(d)
			}
			e.p.kill("m1")
			checks = e.reconcileOnce(t)
			rolled := len(checks) == 1 && checks[0].Action == ActionRolledBack
			if rolled != tc.rollback {
				t.Fatalf("kills %s apart: %+v; want rolled back %v", tc.gap, checks, tc.rollback)
			}
		})
	}
}

// killedAt is when m's newest SIGKILL happened, on the fake's clock.
func (e *env) killedAt(t *testing.T, id string) time.Time {
	t.Helper()
	m, err := e.p.Get(context.Background(), "api", id)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range m.Events {
		if ev.Exit != nil && ev.Exit.Signal == 9 {
			return ev.Timestamp.Add(-e.p.skew)
		}
	}
	t.Fatalf("no kill in %+v", m.Events)
	return time.Time{}
}

// TestGate_WrongHealthAnswersFailAfterTheStartPeriod: a machine that runs
// and answers 500 is failed after the start period and three wrong answers
// in a row — about 25 s at the defaults, not at the window's end; a slow boot
// answering 503, or refusing connections, for 20 s still goes live.
func TestGate_WrongHealthAnswersFailAfterTheStartPeriod(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	for _, strategy := range []Strategy{StrategyInPlace, StrategyBlueGreen} {
		t.Run(string(strategy)+"/500", func(t *testing.T) {
			e := newEnv(t, strategy == StrategyBlueGreen, Options{})
			good := e.publish(t, req(imgGood))
			res := e.publish(t, req(img500))
			if res.Verdict.Status != StatusFailed || res.Release.Status != ReleaseRolledBack {
				t.Fatalf("health 500 = %v, release %s; want failed, rolled back", res.Verdict, res.Release.Status)
			}
			if r := strings.Join(res.Verdict.Reasons, " "); !strings.Contains(r, "HTTP 500") || !strings.Contains(r, "3 looks in a row") {
				t.Errorf("reasons %q", r)
			}
			o := e.gate.Options()
			took := e.verdictAt(res.Release.ID).Sub(res.Release.CreatedAt)
			if limit := o.StartPeriod + time.Duration(o.UnhealthyThreshold+1)*o.LookInterval; took > limit {
				t.Errorf("health-500 verdict after %s, want within %s", took, limit)
			}
			checkAfter(t, e, res, good.Release)
		})
		for _, img := range []string{imgBoot503, imgBootSlow} {
			t.Run(string(strategy)+"/"+img, func(t *testing.T) {
				e := newEnv(t, strategy == StrategyBlueGreen, Options{})
				e.publish(t, req(imgGood))
				res := e.publish(t, req(img))
				if res.Verdict.Status != StatusLive {
					t.Fatalf("slow boot %s = %v, want live", img, res.Verdict)
				}
			})
		}
	}
}

// TestGate_BadImageRefusedBeforeAnyMachineChanges: an image the platform
// does not have is bad input — nothing created, updated or stored.
func TestGate_BadImageRefusedBeforeAnyMachineChanges(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	e := newEnv(t, false, Options{})
	e.publish(t, req(imgGood))
	e.p.checkImages = true
	n := len(e.p.Calls())
	before, _ := e.store.List(context.Background(), "api")
	_, err := e.gate.Publish(context.Background(), req("app:no-such-image"))
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, platform.ErrImageNotFound) || !strings.Contains(err.Error(), "image not found") {
		t.Fatalf("Publish of a missing image = %v, want ErrInvalid and ErrImageNotFound", err)
	}
	if c := e.p.Calls()[n:]; len(c) != 0 {
		t.Errorf("calls after a missing image: %q", c)
	}
	if after, _ := e.store.List(context.Background(), "api"); len(after) != len(before) {
		t.Errorf("releases stored: %d, want %d", len(after), len(before))
	}
}

// TestGate_SignalAndOOMShownNotExitCodeMinusOne: a SIGKILL loop says
// "killed by signal 9 (SIGKILL)", an OOM loop adds oom_killed; neither says
// "exit code -1".
func TestGate_SignalAndOOMShownNotExitCodeMinusOne(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	for img, want := range map[string]string{imgKill: "killed by signal 9 (SIGKILL)", imgOOM: "killed by signal 9 (SIGKILL), oom_killed"} {
		t.Run(img, func(t *testing.T) {
			e := newEnv(t, false, Options{})
			e.publish(t, req(imgGood))
			res := e.publish(t, req(img))
			r := strings.Join(res.Verdict.Reasons, " ")
			if res.Verdict.Status != StatusFailed || !strings.Contains(r, want) || strings.Contains(r, "exit code -1") {
				t.Fatalf("%s = %v; want failed saying %q", img, res.Verdict, want)
			}
			if ms := res.Verdict.Machines; len(ms) != 1 || ms[0].LatestSignal != 9 || ms[0].LatestOOMKilled != (img == imgOOM) {
				t.Errorf("machine summary = %+v", ms)
			}
		})
	}
}

// interruptAt runs a publish of image and cancels its context (the first
// signal) when a progress message containing first appears, and closes
// Abort (the second) when one containing second appears ("" never).
func (e *env) interruptAt(t *testing.T, image, first, second string) (Result, error) {
	t.Helper()
	pctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	abort := make(chan struct{})
	var once1, once2 sync.Once
	e.mu.Lock()
	e.onEvent = func(ev Event) {
		msg := ev.Message
		if ev.Kind == EventLook {
			msg = "look"
		}
		if strings.Contains(msg, first) {
			once1.Do(cancel)
		}
		if second != "" && strings.Contains(msg, second) {
			once2.Do(func() { close(abort) })
		}
	}
	e.mu.Unlock()
	defer func() { e.mu.Lock(); e.onEvent = nil; e.mu.Unlock() }()
	var res Result
	var err error
	r := req(image)
	r.Abort = abort
	e.drive(t, func(context.Context) { res, err = e.gate.Publish(pctx, r) })
	return res, err
}

// TestGate_InterruptFinishesSafely: the first signal during an in-place
// publish restores the last good release and records the release as
// interrupted; in blue-green it removes the new machines and never touches
// the serving ones.
func TestGate_InterruptFinishesSafely(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	for _, strategy := range []Strategy{StrategyInPlace, StrategyBlueGreen} {
		t.Run(string(strategy), func(t *testing.T) {
			e := newEnv(t, strategy == StrategyBlueGreen, Options{})
			good := e.publish(t, req(imgGood))
			res, err := e.interruptAt(t, imgCrash, "look", "")
			if !errors.Is(err, ErrInterrupted) {
				t.Fatalf("interrupted publish error = %v, want ErrInterrupted", err)
			}
			if res.Release.Status != ReleaseInterrupted {
				t.Errorf("release status = %s, want interrupted (%s)", res.Release.Status, res.Release.Reason)
			}
			if cur, _, _ := e.store.Current(context.Background(), "api"); cur.ID != good.Release.ID {
				t.Errorf("current = %s, want %s", cur.ID, good.Release.ID)
			}
			ms, _ := e.p.List(context.Background(), "api")
			for _, m := range ms {
				if m.Release() != good.Release.ID {
					t.Errorf("machine %s runs %s after the interrupt, want %s", m.ID, m.Release(), good.Release.ID)
				}
			}
			if strategy == StrategyBlueGreen {
				for _, c := range e.router.Calls() {
					if c == "deregister "+good.Release.Machines[0] {
						t.Errorf("the serving machine was deregistered: %q", e.router.Calls())
					}
				}
			}
		})
	}
}

// TestGate_SecondSignalAbortsAndSaysHowToRepair: a second signal during the
// rollback stops at once; the error says what was left and the repair
// command, and that command (the reconciler) restores the last good release.
func TestGate_SecondSignalAbortsAndSaysHowToRepair(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	e := newEnv(t, false, Options{})
	good := e.publish(t, req(imgGood))
	e.p.updateLag = 5 * time.Second // the rollback takes a while
	res, err := e.interruptAt(t, imgCrash, "look", "rolling back")
	if !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), RepairCommand) || !strings.Contains(err.Error(), "m1") {
		t.Fatalf("aborted publish error = %v, want ErrAborted naming the machines and %q", err, RepairCommand)
	}
	if res.Release.Status != ReleasePending || !res.Release.Interrupted {
		t.Fatalf("release = %s, interrupted %v; want pending and interrupted", res.Release.Status, res.Release.Interrupted)
	}
	e.p.updateLag = 0
	e.clock.Advance(10 * time.Second)
	checks := e.reconcileOnce(t)
	if len(checks) != 1 || checks[0].Action != ActionRolledBack {
		t.Fatalf("reconcile after an abort = %+v, want rolled back", checks)
	}
	if cur, _, _ := e.store.Current(context.Background(), "api"); cur.ID != good.Release.ID {
		t.Errorf("current = %s, want %s", cur.ID, good.Release.ID)
	}
	m, _ := e.p.Get(context.Background(), "api", "m1")
	if m.Release() != good.Release.ID {
		t.Errorf("m1 runs %s after the repair, want %s", m.Release(), good.Release.ID)
	}
}

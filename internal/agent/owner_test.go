package agent

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
	"github.com/mythex/mythex/internal/watchdog"
)

// A deploy step checks its lease, then works. If the lease could run out
// between the two, its recovery would return the host to its last good
// definition and let go of it — and the step would then act on the
// recovered host with no lease at all: publish an unverified version over
// it, drain or stop its services. Each case pauses a dying deploy's step
// right after its lease check (a hook), lets the lease run out on the
// injected clock, and resumes the step only once the recovery has either
// finished (the gap is open) or is waiting for the step (closed). The host
// must end on its last good version, running whole — which it does only if
// the recovery acts after the step.
func TestAgent_LeaseEndsBetweenAStepsCheckAndItsWork(t *testing.T) {
	t.Parallel()
	cases := []struct {
		step   string
		before []string // the deploy's steps before the paused one
	}{
		{"publish", nil},
		{"drain", []string{"publish"}},
		{"stop", []string{"publish", "drain"}},
		{"start", []string{"publish", "drain", "stop"}},
	}
	for _, tc := range cases {
		t.Run(tc.step, func(t *testing.T) {
			t.Parallel() // each case owns its agent, clock and state dir
			leaseEndsMidStep(t, tc.step, tc.before)
		})
	}
}

func leaseEndsMidStep(t *testing.T, step string, before []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clock := clockwork.NewFakeClock()
	dir := memDir(t)
	rt := newRaceRuntime(dir, 1, 0)
	var (
		armed           atomic.Bool
		paused          = make(chan struct{})
		resume          = make(chan struct{})
		recoveryWaiting = make(chan struct{})
		waitOnce        sync.Once
	)
	a, err := New(Config{Host: "web-1", StateDir: dir, Runtime: rt, RuntimeName: "race", Clock: clock, StartTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a.hooks = hooks{
		afterLeaseCheck: func(s string) {
			if s == step && armed.CompareAndSwap(true, false) {
				close(paused)
				<-resume
			}
		},
		recoveryWaits: func(string) { waitOnce.Do(func() { close(recoveryWaiting) }) },
	}
	c := serveAgent(t, a)
	h := &raceHost{t: t}

	// v1 runs, verified and marked good.
	h.deployGood(ctx, c, "v1")

	// The dying deploy of v2.
	const ttl = 10 * time.Second
	l, err := c.AcquireLease(ctx, false, "dying deploy v2", ttl)
	if err != nil {
		t.Fatal(err)
	}
	run := func(s string) error {
		switch s {
		case "publish":
			_, err := c.Publish(ctx, l.ID, h.definition("v2"))
			return err
		case "drain":
			return c.Drain(ctx, l.ID, nil)
		case "stop":
			_, err := c.Stop(ctx, l.ID)
			return err
		case "start":
			_, err := c.Start(ctx, l.ID)
			return err
		}
		return fmt.Errorf("no step %q", s)
	}
	for _, s := range before {
		if err := run(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	armed.Store(true)
	stepDone := make(chan error, 1)
	go func() { stepDone <- run(step) }()
	select {
	case <-paused:
	case <-ctx.Done():
		t.Fatalf("the %s step never reached its work", step)
	}
	// The deploy dies here: its lease runs out, mid-step.
	clock.Advance(ttl + time.Second)
	recoveredUnderStep := false
	for waiting := false; !waiting; {
		select {
		case <-recoveryWaiting:
			waiting = true
		case <-ctx.Done():
			t.Fatalf("the recovery neither waited for the %s step nor finished", step)
		case <-time.After(2 * time.Millisecond):
			if r := a.recovery(); r != nil && r.State != agentapi.RecoveryRunning {
				recoveredUnderStep, waiting = true, true
			}
		}
	}
	close(resume)
	stepErr := <-stepDone
	t.Logf("the paused %s step returned %v", step, stepErr)
	if recoveredUnderStep {
		t.Errorf("the recovery ran to its end while the %s step was between its lease check and its work", step)
	}
	// The recovery ends, and nothing a stop left runs on.
	var st agentapi.Status
	for {
		st, err = c.Status(ctx)
		if err == nil && st.Lease == nil && st.Recovery != nil && st.Recovery.State != agentapi.RecoveryRunning && st.LockHolder == "" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the host was not recovered: %+v", st)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := a.finishDrains(ctx); err != nil {
		t.Fatal(err)
	}
	if st.Recovery.State != agentapi.RecoveryRestored || st.Recovery.Version != "v1" {
		t.Errorf("recovery = %+v, want restored to v1", st.Recovery)
	}
	refs, err := a.Store().Refs()
	if err != nil {
		t.Fatal(err)
	}
	if refs.Current != refs.LastGood || refs.HalfDeployed() {
		t.Errorf("refs after the recovery = %+v: want current = last good (v1), not half deployed", refs)
	}
	if rep, err := c.Verify(ctx, nil, "v1"); err != nil || !rep.OK {
		t.Errorf("after the step and the recovery, verify v1 = %+v, %v: the step acted on the recovered host", rep, err)
	}
	sts, _ := rt.Status(ctx)
	for _, s := range sts {
		if s.Running() && s.Version != "v1" {
			t.Errorf("%s runs %s after the recovery", s.Name, s.Version)
		}
	}
	_ = definition.RefCurrent
}

// slowRuntime is the in-memory runtime on a machine so loaded that every
// look at the services takes longer than the watchdog's interval.
type slowRuntime struct {
	*raceRuntime
	look atomic.Int64 // nanoseconds
}

func (s *slowRuntime) Status(ctx context.Context) ([]runtime.ServiceStatus, error) {
	time.Sleep(time.Duration(s.look.Load())) // the machine's slowness, not a synchronisation
	return s.raceRuntime.Status(ctx)
}

// TestAgent_WatchdogRoundsLongerThanTheirIntervalDoNotStarveADeploy is the
// cause of the race test's rare "lease not taken for 30s": with rounds
// longer than W the watchdog took the host lock again microseconds after it
// let go, and a deploy that only tried the lock missed every gap. A lease
// request now waits for the round in progress and goes first: every single
// request is granted.
func TestAgent_WatchdogRoundsLongerThanTheirIntervalDoNotStarveADeploy(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := memDir(t)
	rt := &slowRuntime{raceRuntime: newRaceRuntime(dir, 1, 0)}
	a, err := New(Config{Host: "web-1", StateDir: dir, Runtime: rt, RuntimeName: "race", StartTimeout: time.Second,
		Watchdog: &watchdog.Policy{Interval: time.Millisecond, FailuresBeforeHeal: 3}})
	if err != nil {
		t.Fatal(err)
	}
	c := serveAgent(t, a)
	h := &raceHost{t: t}
	h.deployGood(ctx, c, "v1")
	// From now on every round takes three intervals.
	rt.look.Store(int64(3 * time.Millisecond))
	slow := time.Now()
	// Rounds run back to back now: wait for one to end.
	for w := a.Watchdog(); ; {
		if w.Status().LastRound.After(slow) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the watchdog never checked the host")
		}
		time.Sleep(time.Millisecond)
	}
	for i := range 10 {
		l, err := c.AcquireLease(ctx, false, fmt.Sprintf("deploy %d", i), time.Minute)
		if err != nil {
			t.Fatalf("lease request %d refused while the watchdog's rounds ran long: %v", i, err)
		}
		if err := c.ReleaseLease(ctx, false, l.ID); err != nil {
			t.Fatal(err)
		}
	}
}

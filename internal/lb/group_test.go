package lb

import (
	"errors"
	"testing"
	"time"
)

const (
	addrA = "127.0.0.1:9101"
	addrB = "127.0.0.1:9102"
	addrC = "127.0.0.1:9103"
)

// checkOf waits for the next finished check of id, skipping other targets'.
func (h *harness) checkOf(id string) CheckResult {
	h.t.Helper()
	for {
		if e := h.nextCheck(); e.id == id {
			return e.r
		}
	}
}

func TestTargetGroup_NewTargetHealthyAfterOnePass(t *testing.T) {
	h := newHarness(t, testSettings())
	h.register("a", addrA, modePass)
	if c := h.nextChange("a"); c.From.State != StateUnused || c.To.State != StateInitial || c.To.Reason != ReasonRegistrationInProgress {
		t.Fatalf("registration change = %s/%s → %s/%s, want unused → initial/Elb.RegistrationInProgress",
			c.From.State, c.From.Reason, c.To.State, c.To.Reason)
	}
	c := h.nextChange("a")
	if c.To.State != StateHealthy || h.elapsed(c.At) != 0 {
		t.Fatalf("after the first pass: %s at +%v, want healthy at +0 (ALB: one passed check makes a new target healthy)", c.To.State, h.elapsed(c.At))
	}
	if st := h.status("a"); !st.InRotation || len(st.LastChecks) != 1 || !st.LastChecks[0].OK || st.LastChecks[0].Status != 200 {
		t.Fatalf("status = %+v, want in rotation with one passed check", st)
	}
}

func TestTargetGroup_DetectionTimeIsIntervalTimesUnhealthyThreshold(t *testing.T) {
	s := testSettings() // interval 5s, unhealthy threshold 2
	h := newHarness(t, s)
	h.register("a", addrA, modePass)
	h.register("b", addrB, modePass)
	h.nextChange("a")
	h.nextChange("a") // healthy at +0

	h.hc.set(addrA, modeRefuse) // a stops listening right after its passed check
	h.tick(s.HealthCheckInterval, "a", "b")
	if st := h.status("a"); st.State != StateHealthy || !st.InRotation {
		t.Fatalf("after one failure: %s in_rotation=%v, want still healthy and in rotation", st.State, st.InRotation)
	}
	h.tick(s.HealthCheckInterval, "a", "b")
	c := h.nextChange("a")
	want := s.HealthCheckInterval * time.Duration(s.Thresholds.Unhealthy)
	if c.To.State != StateUnhealthy || h.elapsed(c.At) != want {
		t.Fatalf("a became %s at +%v, want unhealthy at +%v (interval × unhealthy threshold)", c.To.State, h.elapsed(c.At), want)
	}
	if c.To.Reason != ReasonFailedHealthChecks {
		t.Errorf("reason = %s, want %s", c.To.Reason, ReasonFailedHealthChecks)
	}
	if st := h.status("a"); st.InRotation {
		t.Error("unhealthy a is still in rotation while b is healthy")
	}
}

func TestTargetGroup_DetectionTimeOfHangingChecksAddsTheTimeout(t *testing.T) {
	s := testSettings() // interval 5s, timeout 2s, unhealthy threshold 2
	h := newHarness(t, s)
	h.register("a", addrA, modePass)
	h.register("b", addrB, modePass)
	h.nextChange("a")
	h.nextChange("a")

	h.hc.set(addrA, modeHang) // a accepts but never answers
	for i := range s.Thresholds.Unhealthy {
		h.clock.Advance(s.HealthCheckInterval - s.HealthCheckTimeout*time.Duration(min(i, 1)))
		h.started(addrA)
		h.checkOf("b")
		h.clock.Advance(s.HealthCheckTimeout)
		r := h.checkOf("a")
		if r.Outcome != CheckTimedOut || r.Duration != s.HealthCheckTimeout {
			t.Fatalf("check %d: %s after %v, want timeout after %v", i+1, r.Outcome, r.Duration, s.HealthCheckTimeout)
		}
	}
	c := h.nextChange("a")
	want := s.HealthCheckInterval*time.Duration(s.Thresholds.Unhealthy) + s.HealthCheckTimeout
	if c.To.State != StateUnhealthy || c.To.Reason != ReasonTimeout || h.elapsed(c.At) != want {
		t.Fatalf("a became %s/%s at +%v, want unhealthy/Target.Timeout at +%v (interval × threshold + timeout)",
			c.To.State, c.To.Reason, h.elapsed(c.At), want)
	}
}

func TestTargetGroup_RecoveryNeedsHealthyThreshold(t *testing.T) {
	s := testSettings() // healthy threshold 3
	h := newHarness(t, s)
	h.register("a", addrA, modeCode503)
	h.tick(s.HealthCheckInterval, "a")
	if st := h.status("a"); st.State != StateUnhealthy || st.Reason != ReasonResponseCodeMismatch {
		t.Fatalf("after two 503s: %s/%s, want unhealthy/%s", st.State, st.Reason, ReasonResponseCodeMismatch)
	}
	unhealthyAt := h.clock.Now()

	h.hc.set(addrA, modePass)
	for i := 1; i < s.Thresholds.Healthy; i++ {
		h.tick(s.HealthCheckInterval, "a")
		if st := h.status("a"); st.State != StateUnhealthy {
			t.Fatalf("after %d passes: %s, want still unhealthy (threshold %d)", i, st.State, s.Thresholds.Healthy)
		}
	}
	h.tick(s.HealthCheckInterval, "a")
	if st := h.status("a"); st.State != StateHealthy || !st.InRotation {
		t.Fatalf("after %d passes: %s in_rotation=%v, want healthy and in rotation", s.Thresholds.Healthy, st.State, st.InRotation)
	}
	if got, want := h.clock.Since(unhealthyAt), s.HealthCheckInterval*time.Duration(s.Thresholds.Healthy); got != want {
		t.Errorf("recovered %v after the last failure, want %v", got, want)
	}
}

func TestTargetGroup_FailsOpenWhenNoTargetIsHealthy(t *testing.T) {
	s := testSettings()
	h := newHarness(t, s)
	h.register("a", addrA, modePass)
	h.register("b", addrB, modePass)
	h.hc.set(addrA, modeCode503)
	h.hc.set(addrB, modeRefuse)
	h.tick(s.HealthCheckInterval, "a", "b")
	h.tick(s.HealthCheckInterval, "a", "b")
	for _, id := range []string{"a", "b"} {
		if st := h.status(id); st.State != StateUnhealthy || !st.InRotation {
			t.Fatalf("%s: %s in_rotation=%v, want unhealthy and in rotation (fail open)", id, st.State, st.InRotation)
		}
	}
	if !h.g.FailingOpen() {
		t.Fatal("FailingOpen = false with every target unhealthy")
	}
	seen := map[string]int{}
	for range 10 {
		tg := h.g.acquire()
		seen[tg.ID()]++
		tg.release()
	}
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Fatalf("picks while failing open = %v, want both unhealthy targets", seen)
	}

	h.hc.set(addrB, modePass)
	for range s.Thresholds.Healthy {
		h.tick(s.HealthCheckInterval, "a", "b")
	}
	if a, b := h.status("a"), h.status("b"); a.InRotation || !b.InRotation || h.g.FailingOpen() {
		t.Fatalf("after b recovered: a in_rotation=%v b in_rotation=%v failing open=%v, want only b", a.InRotation, b.InRotation, h.g.FailingOpen())
	}
}

func TestTargetGroup_InitialTargetGetsNoTrafficWhileAnotherIsHealthy(t *testing.T) {
	h := newHarness(t, testSettings())
	h.register("a", addrA, modePass)
	h.register("c", addrC, modeCode503)
	st := h.status("c")
	if st.State != StateInitial || st.Reason != ReasonInitialHealthChecking || st.InRotation {
		t.Fatalf("c = %s/%s in_rotation=%v, want initial/%s out of rotation", st.State, st.Reason, st.InRotation, ReasonInitialHealthChecking)
	}
	for range 10 {
		tg := h.g.acquire()
		if tg.ID() != "a" {
			t.Fatalf("picked %s, want only the healthy a", tg.ID())
		}
		tg.release()
	}
}

func TestTargetGroup_InitialTargetsGetTrafficWhenNoneIsHealthy(t *testing.T) {
	h := newHarness(t, testSettings())
	h.register("c", addrC, modeCode503)
	if st := h.status("c"); st.State != StateInitial || !st.InRotation {
		t.Fatalf("lone initial c: %s in_rotation=%v, want in rotation (fail open covers every registered target)", st.State, st.InRotation)
	}
}

// acquireTarget picks until it gets id (round robin reaches it quickly).
func acquireTarget(t *testing.T, g *TargetGroup, id string) *Target {
	t.Helper()
	for range 100 {
		tg := g.acquire()
		if tg != nil && tg.ID() == id {
			return tg
		}
		if tg != nil {
			tg.release()
		}
	}
	t.Fatalf("never picked %s", id)
	return nil
}

func TestTargetGroup_DrainCompletesWhenInFlightReachesZero(t *testing.T) {
	h := newHarness(t, testSettings())
	h.register("a", addrA, modePass)
	h.register("b", addrB, modePass)
	held := acquireTarget(t, h.g, "a")
	deregAt := h.clock.Now()

	st, err := h.g.Deregister("a")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateDraining || st.Reason != ReasonDeregistrationInProgress || st.InRotation || st.InFlight != 1 {
		t.Fatalf("after deregister: %+v, want draining, out of rotation, 1 in flight", st)
	}
	for range 10 {
		tg := h.g.acquire()
		if tg.ID() == "a" {
			t.Fatal("draining a took a new request")
		}
		tg.release()
	}
	for c := h.nextChange("a"); c.To.State != StateDraining; c = h.nextChange("a") {
	}
	held.release() // the last in-flight request ends; the fake clock has not moved
	c := h.nextChange("a")
	if c.To.State != StateUnused || c.To.Reason != ReasonNotRegistered || c.At != deregAt || c.CutOff != 0 {
		t.Fatalf("drain end: %s/%s at +%v cut %d, want unused/%s at once with nothing cut",
			c.To.State, c.To.Reason, c.At.Sub(deregAt), c.CutOff, ReasonNotRegistered)
	}
	if _, err := h.g.Target("a"); !errors.Is(err, ErrTargetNotFound) {
		t.Fatalf("Target(a) after the drain: %v, want ErrTargetNotFound", err)
	}
}

func TestTargetGroup_DrainWithNothingInFlightCompletesAtOnce(t *testing.T) {
	h := newHarness(t, testSettings())
	h.register("a", addrA, modePass)
	if _, err := h.g.Deregister("a"); err != nil {
		t.Fatal(err)
	}
	for c := h.nextChange("a"); c.To.State != StateUnused; c = h.nextChange("a") {
		if h.elapsed(c.At) != 0 {
			t.Fatalf("change at +%v, want none after +0", h.elapsed(c.At))
		}
	}
	if got := h.g.Targets(); len(got) != 0 {
		t.Fatalf("targets after the drain = %+v, want none", got)
	}
}

func TestTargetGroup_DeregistrationDelayCutsOffLongRequests(t *testing.T) {
	s := testSettings() // deregistration delay 30s
	h := newHarness(t, s)
	h.register("a", addrA, modePass)
	held := acquireTarget(t, h.g, "a")
	defer held.release()
	deregAt := h.clock.Now()
	if _, err := h.g.Deregister("a"); err != nil {
		t.Fatal(err)
	}
	for c := h.nextChange("a"); c.To.State != StateDraining; c = h.nextChange("a") {
	}
	h.clock.Advance(s.DeregistrationDelay)
	c := h.nextChange("a")
	if c.To.State != StateUnused || c.At.Sub(deregAt) != s.DeregistrationDelay || c.CutOff != 1 {
		t.Fatalf("drain end: %s at +%v cut %d, want unused at +%v with 1 request cut off",
			c.To.State, c.At.Sub(deregAt), c.CutOff, s.DeregistrationDelay)
	}
	if !held.cut.Load() {
		t.Error("the in-flight request is not marked as cut off")
	}
}

func TestTargetGroup_RegisterDrainingTargetAgain(t *testing.T) {
	s := testSettings()
	h := newHarness(t, s)
	h.register("a", addrA, modePass)
	held := acquireTarget(t, h.g, "a")
	if _, err := h.g.Deregister("a"); err != nil {
		t.Fatal(err)
	}
	st, err := h.g.Register("a", addrA)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateInitial || st.Reason != ReasonRegistrationInProgress || st.InFlight != 1 {
		t.Fatalf("registered again: %+v, want initial with its request still in flight", st)
	}
	h.started(addrA)
	h.checkOf("a")
	h.clock.Advance(s.DeregistrationDelay) // the old drain must not cut anything now
	h.checkOf("a")
	held.release()
	if st := h.status("a"); st.State != StateHealthy || held.cut.Load() {
		t.Fatalf("a = %s cut=%v, want healthy and nothing cut", st.State, held.cut.Load())
	}
}

func TestTargetGroup_RegisterErrors(t *testing.T) {
	h := newHarness(t, testSettings())
	h.register("a", addrA, modePass)
	tests := []struct {
		name, id, addr string
		want           error
	}{
		{"same id, other address", "a", addrB, ErrTargetConflict},
		{"empty id", "", addrB, ErrInvalidTarget},
		{"slash in id", "a/b", addrB, ErrInvalidTarget},
		{"no port", "b", "127.0.0.1", ErrInvalidTarget},
		{"port out of range", "b", "127.0.0.1:70000", ErrInvalidTarget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := h.g.Register(tt.id, tt.addr); !errors.Is(err, tt.want) {
				t.Fatalf("Register(%q, %q) = %v, want %v", tt.id, tt.addr, err, tt.want)
			}
		})
	}
	if got := h.g.Targets(); len(got) != 1 || got[0].Address != addrA {
		t.Fatalf("targets after refused registrations = %+v, want only a at %s", got, addrA)
	}
	if _, err := h.g.Deregister("nope"); !errors.Is(err, ErrTargetNotFound) {
		t.Fatalf("Deregister(nope) = %v, want ErrTargetNotFound", err)
	}
}

func TestTargetGroup_RegisterTwiceChangesNothing(t *testing.T) {
	h := newHarness(t, testSettings())
	h.register("a", addrA, modePass)
	h.nextChange("a")
	h.nextChange("a")
	st, err := h.g.Register("a", addrA)
	if err != nil || st.State != StateHealthy {
		t.Fatalf("Register again = %+v, %v; want healthy, nil", st, err)
	}
	select {
	case c := <-h.changes:
		t.Fatalf("registering again changed %s: %s → %s", c.ID, c.From.State, c.To.State)
	default:
	}
}

func TestTargetGroup_LastChecksNewestFirst(t *testing.T) {
	s := testSettings()
	h := newHarness(t, s)
	h.register("a", addrA, modePass)
	for range lastChecksKept + 2 {
		h.tick(s.HealthCheckInterval, "a")
	}
	st := h.status("a")
	if len(st.LastChecks) != lastChecksKept {
		t.Fatalf("kept %d checks, want %d", len(st.LastChecks), lastChecksKept)
	}
	for i := 1; i < len(st.LastChecks); i++ {
		if got := st.LastChecks[i-1].At.Sub(st.LastChecks[i].At); got != s.HealthCheckInterval {
			t.Fatalf("checks %d and %d are %v apart, want newest first, one interval apart", i-1, i, got)
		}
	}
}

func TestTargetGroup_ClosedRefusesChanges(t *testing.T) {
	h := newHarness(t, testSettings())
	h.register("a", addrA, modePass)
	h.g.Close()
	if _, err := h.g.Register("b", addrB); !errors.Is(err, ErrClosed) {
		t.Fatalf("Register after Close = %v, want ErrClosed", err)
	}
	if _, err := h.g.Deregister("a"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Deregister after Close = %v, want ErrClosed", err)
	}
	h.g.Close() // idempotent
}

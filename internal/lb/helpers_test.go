package lb

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// checkMode is how a fake target answers health checks.
type checkMode int

const (
	modePass    checkMode = iota // 200
	modeCode503                  // 503
	modeRefuse                   // connection refused
	modeHang                     // never answers; the check times out
)

// fakeChecker answers health checks from an in-memory mode per address and
// announces each check as it starts.
type fakeChecker struct {
	mu      sync.Mutex
	modes   map[string]checkMode
	started chan string
}

func newFakeChecker() *fakeChecker {
	return &fakeChecker{modes: map[string]checkMode{}, started: make(chan string, 1024)}
}

func (f *fakeChecker) set(addr string, m checkMode) {
	f.mu.Lock()
	f.modes[addr] = m
	f.mu.Unlock()
}

func (f *fakeChecker) Check(ctx context.Context, addr, _ string) CheckResult {
	f.mu.Lock()
	m := f.modes[addr]
	f.mu.Unlock()
	f.started <- addr
	switch m {
	case modeCode503:
		return CheckResult{Outcome: CheckCodeMismatch, Status: 503, Err: "answered 503, want 200"}
	case modeRefuse:
		return CheckResult{Outcome: CheckConnFailed, Err: "connection refused"}
	case modeHang:
		<-ctx.Done()
		return transportFailure(ctx, ctx.Err())
	}
	return CheckResult{Outcome: CheckPassed, Status: 200}
}

// checkEvent is one finished check seen through GroupDeps.OnCheck.
type checkEvent struct {
	id string
	r  CheckResult
}

// harness is a target group on a fake clock with a fake health checker, recording
// every check and change.
type harness struct {
	t       *testing.T
	clock   *clockwork.FakeClock
	hc      *fakeChecker
	g       *TargetGroup
	checks  chan checkEvent
	changes chan Change
	t0      time.Time
}

func testSettings() Settings {
	return Settings{
		HealthCheckPath:     "/healthz",
		HealthCheckInterval: 5 * time.Second,
		HealthCheckTimeout:  2 * time.Second,
		Thresholds:          Thresholds{Healthy: 3, Unhealthy: 2},
		DeregistrationDelay: 30 * time.Second,
		IdleTimeout:         60 * time.Second,
		ConnectTimeout:      10 * time.Second,
		Algorithm:           RoundRobin,
		MaxBodySize:         DefaultMaxBodySize,
	}
}

func newHarness(t *testing.T, s Settings) *harness {
	t.Helper()
	h := &harness{
		t: t, clock: clockwork.NewFakeClock(), hc: newFakeChecker(),
		checks: make(chan checkEvent, 1024), changes: make(chan Change, 1024),
	}
	h.t0 = h.clock.Now()
	h.g = NewTargetGroup(s, GroupDeps{
		Clock: h.clock, Logger: discardLogger(), HealthChecker: h.hc,
		OnCheck:  func(id string, r CheckResult) { h.checks <- checkEvent{id, r} },
		OnChange: func(c Change) { h.changes <- c },
	})
	t.Cleanup(h.g.Close)
	return h
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

const waitFor = 10 * time.Second // generous: the machine is shared

// nextCheck waits for the next finished check.
func (h *harness) nextCheck() checkEvent {
	h.t.Helper()
	select {
	case e := <-h.checks:
		return e
	case <-time.After(waitFor):
		h.t.Fatal("no health check finished in time")
	}
	return checkEvent{}
}

// nextChange waits for the next state change of id, skipping others.
func (h *harness) nextChange(id string) Change {
	h.t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case c := <-h.changes:
			if c.ID == id {
				return c
			}
		case <-deadline:
			h.t.Fatalf("no state change of %s in time", id)
		}
	}
}

// started waits until a health check of addr has started.
func (h *harness) started(addr string) {
	h.t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case a := <-h.hc.started:
			if a == addr {
				return
			}
		case <-deadline:
			h.t.Fatalf("no health check of %s started in time", addr)
		}
	}
}

// register registers id at addr and waits for its first (immediate) check.
func (h *harness) register(id, addr string, m checkMode) {
	h.t.Helper()
	h.hc.set(addr, m)
	if _, err := h.g.Register(id, addr); err != nil {
		h.t.Fatalf("register %s: %v", id, err)
	}
	h.started(addr)
	if e := h.nextCheck(); e.id != id {
		h.t.Fatalf("first check was of %s, want %s", e.id, id)
	}
}

// tick advances the fake clock by d and, for each of ids, waits for the check
// the tick starts to finish (mode must not be hang).
func (h *harness) tick(d time.Duration, ids ...string) {
	h.t.Helper()
	h.clock.Advance(d)
	for range ids {
		h.nextCheck()
	}
}

func (h *harness) status(id string) TargetStatus {
	h.t.Helper()
	st, err := h.g.Target(id)
	if err != nil {
		h.t.Fatalf("target %s: %v", id, err)
	}
	return st
}

// elapsed is the fake time since the harness started.
func (h *harness) elapsed(at time.Time) time.Duration { return at.Sub(h.t0) }

// waitUntil polls cond every few milliseconds until it holds or the deadline
// passes.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

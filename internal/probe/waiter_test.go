package probe

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func newTestWaiter(t *testing.T, precise bool, stop chan struct{}) *waiter {
	t.Helper()
	w := &waiter{clock: clockwork.NewRealClock(), precise: precise, ctx: t.Context(), stop: stop}
	t.Cleanup(w.close)
	return w
}

// TestWaiter_Until: waits never end before their time, on either path.
func TestWaiter_Until(t *testing.T) {
	for _, precise := range []bool{true, false} {
		w := newTestWaiter(t, precise, make(chan struct{}))
		for _, d := range []time.Duration{0, 150 * time.Microsecond, time.Millisecond, PreciseWindow + 3*time.Millisecond} {
			due := time.Now().Add(d)
			if !w.until(due) {
				t.Fatalf("precise=%v: until(+%v) reported a stop", precise, d)
			}
			if now := time.Now(); now.Before(due) {
				t.Errorf("precise=%v: until(+%v) returned %v early", precise, d, due.Sub(now))
			}
		}
	}
}

// TestWaiter_StopInterrupts: Stop and context cancellation end a long wait.
func TestWaiter_StopInterrupts(t *testing.T) {
	stop := make(chan struct{})
	w := newTestWaiter(t, true, stop)
	go func() { close(stop) }()
	start := time.Now()
	if w.until(time.Now().Add(time.Hour)) {
		t.Fatal("until returned true after Stop")
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("Stop took %v to interrupt the wait", el)
	}

	ctx, cancel := context.WithCancel(t.Context())
	w2 := &waiter{clock: clockwork.NewRealClock(), precise: true, ctx: ctx, stop: make(chan struct{})}
	t.Cleanup(w2.close)
	cancel()
	if w2.until(time.Now().Add(time.Hour)) {
		t.Fatal("until returned true after the context ended")
	}
}

// TestWaiter_FakeClock: with an injected clock the wait is on its timers only.
func TestWaiter_FakeClock(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	w := &waiter{clock: clock, ctx: t.Context(), stop: make(chan struct{})}
	t.Cleanup(w.close)
	done := make(chan bool)
	go func() { done <- w.until(t0.Add(5 * time.Second)) }()
	if err := clock.BlockUntilContext(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(4 * time.Second)
	select {
	case <-done:
		t.Fatal("until returned a second early")
	default:
	}
	clock.Advance(time.Second)
	if !<-done {
		t.Error("until reported a stop")
	}
}

func TestNew_PreciseOnlyWithTheDefaultClock(t *testing.T) {
	cfg := Config{URL: "http://h/", Rate: 1}
	if p := mustNew(t, cfg, Deps{}); !p.precise {
		t.Error("default clock: precise sleeps off")
	}
	if p := mustNew(t, cfg, Deps{Clock: clockwork.NewRealClock()}); p.precise {
		t.Error("injected clock: precise sleeps on")
	}
}

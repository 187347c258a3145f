package lbport

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
)

// fakeDriver answers Describe from an in-memory state per target id and
// records the ids of every call.
type fakeDriver struct {
	mu     sync.Mutex
	states map[string]Target
	errs   []error // returned by the next calls, in order
	calls  [][]string
	called chan struct{}
}

func newFakeDriver() *fakeDriver {
	return &fakeDriver{states: map[string]Target{}, called: make(chan struct{}, 100)}
}

func (f *fakeDriver) set(id string, t Target) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t.ID = id
	f.states[id] = t
}

func (f *fakeDriver) Kind() string                                { return "fake" }
func (f *fakeDriver) Register(context.Context, TargetRef) error   { return nil }
func (f *fakeDriver) Deregister(context.Context, TargetRef) error { return nil }
func (f *fakeDriver) Settings(context.Context) (Settings, error)  { return Settings{}, nil }
func (f *fakeDriver) Apply(context.Context, Settings) error       { return nil }

func (f *fakeDriver) Describe(_ context.Context, ts ...TargetRef) ([]Target, error) {
	f.mu.Lock()
	defer func() { f.mu.Unlock(); f.called <- struct{}{} }()
	var ids []string
	for _, t := range ts {
		ids = append(ids, t.ID)
	}
	f.calls = append(f.calls, ids)
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	out := make([]Target, len(ts))
	for i, t := range ts {
		st, ok := f.states[t.ID]
		if !ok {
			st = Target{ID: t.ID, State: StateUnused, Reason: ReasonNotRegistered}
		}
		out[i] = st
	}
	return out, nil
}

// callLog is the ids of every Describe call, each call's sorted (the
// Poller's order within a call is not part of its contract).
func (f *fakeDriver) callLog() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([][]string, 0, len(f.calls))
	for _, c := range f.calls {
		out = append(out, slices.Sorted(slices.Values(c)))
	}
	return out
}

const generous = 10 * time.Second

func waitCall(t *testing.T, f *fakeDriver) {
	t.Helper()
	select {
	case <-f.called:
	case <-time.After(generous):
		t.Fatal("no Describe call")
	}
}

func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(generous)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

type result struct {
	t   Target
	err error
}

func TestPoller_OneCallPerPollForEveryWaitedTarget(t *testing.T) {
	f := newFakeDriver()
	f.set("a", Target{State: StateDraining, InFlight: -1})
	f.set("b", Target{State: StateDraining, InFlight: -1})
	clock := clockwork.NewFakeClock()
	p := NewPoller(f, clock, 2*time.Second)
	ctx := context.Background()

	ra, rb := make(chan result, 1), make(chan result, 1)
	go func() { tg, err := p.Wait(ctx, TargetRef{ID: "a"}, time.Minute, OutOfRotation); ra <- result{tg, err} }()
	waitCall(t, f) // the first poll is immediate, for a alone
	go func() { tg, err := p.Wait(ctx, TargetRef{ID: "b"}, time.Minute, OutOfRotation); rb <- result{tg, err} }()
	waitCond(t, "b waiting", func() bool { return p.Waiting() == 2 })
	f.set("a", Target{State: StateUnused, Reason: ReasonNotRegistered, InFlight: -1})
	clock.BlockUntilContext(ctx, 3) // two deadlines and the poll's sleep
	clock.Advance(2 * time.Second)
	waitCall(t, f)
	if r := <-ra; r.err != nil || r.t.State != StateUnused {
		t.Fatalf("a: %+v, %v", r.t, r.err)
	}
	f.set("b", Target{State: StateUnused, InFlight: -1})
	// Three again: a's deadline stays on the fake clock after its Wait
	// returned, so 2 would not prove the poll is asleep yet.
	clock.BlockUntilContext(ctx, 3)
	clock.Advance(2 * time.Second)
	waitCall(t, f)
	if r := <-rb; r.err != nil {
		t.Fatalf("b: %v", r.err)
	}
	got := fmt.Sprint(f.callLog())
	if got != "[[a] [a b] [b]]" {
		t.Fatalf("calls %s, want [[a] [a b] [b]]: one call per poll for every target waited on", got)
	}
}

func TestPoller_ThrottlingIsRetriedNotFatal(t *testing.T) {
	f := newFakeDriver()
	f.set("a", Target{State: StateHealthy, InRotation: true})
	f.errs = []error{fmt.Errorf("describe: %w", ErrThrottled), fmt.Errorf("describe: %w", ErrThrottled)}
	clock := clockwork.NewFakeClock()
	p := NewPoller(f, clock, time.Second)
	ctx := context.Background()
	r := make(chan result, 1)
	go func() { tg, err := p.Wait(ctx, TargetRef{ID: "a"}, time.Minute, InService); r <- result{tg, err} }()
	for range 2 {
		waitCall(t, f)
		clock.BlockUntilContext(ctx, 2)
		clock.Advance(time.Second)
	}
	waitCall(t, f)
	if res := <-r; res.err != nil || res.t.State != StateHealthy {
		t.Fatalf("after two throttled polls: %+v, %v", res.t, res.err)
	}
	if p.TransientErrors() != 2 {
		t.Fatalf("transient errors counted %d, want 2", p.TransientErrors())
	}
}

func TestPoller_PermanentErrorEndsTheWait(t *testing.T) {
	f := newFakeDriver()
	f.errs = []error{fmt.Errorf("describe: %w", ErrTargetGroupNotFound)}
	p := NewPoller(f, clockwork.NewFakeClock(), time.Second)
	_, err := p.Wait(context.Background(), TargetRef{ID: "a"}, time.Minute, InService)
	if !errors.Is(err, ErrTargetGroupNotFound) {
		t.Fatalf("err = %v, want ErrTargetGroupNotFound", err)
	}
}

func TestPoller_LimitSaysWhatTheLBLastReported(t *testing.T) {
	f := newFakeDriver()
	f.set("a", Target{State: StateUnhealthy, Reason: ReasonFailedHealthChecks, InFlight: -1})
	clock := clockwork.NewFakeClock()
	p := NewPoller(f, clock, time.Second)
	ctx := context.Background()
	r := make(chan result, 1)
	go func() { tg, err := p.Wait(ctx, TargetRef{ID: "a"}, 3*time.Second, InService); r <- result{tg, err} }()
	waitCall(t, f)
	clock.BlockUntilContext(ctx, 2)
	clock.Advance(3 * time.Second)
	res := <-r
	if res.err == nil || !strings.Contains(res.err.Error(), "unhealthy Target.FailedHealthChecks") {
		t.Fatalf("err = %v, want the last state in it", res.err)
	}
}

// The Poller's goroutine ends with the last wait, however that wait ends:
// its owner (a deploy) returns with nothing of it left running. In a
// synctest bubble, where a goroutine left asleep also fails the test.
func TestPoller_GoroutineEndsWithTheLastWait(t *testing.T) {
	cases := []struct {
		name  string
		limit time.Duration
		ctx   func() (context.Context, context.CancelFunc)
	}{
		{"limit passed", 3 * time.Second, func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
		{"context ended", time.Hour, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 3*time.Second)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeDriver()
				f.set("a", Target{State: StateUnhealthy, Reason: ReasonFailedHealthChecks, InFlight: -1})
				p := NewPoller(f, nil, 2*time.Second)
				ctx, cancel := tc.ctx()
				defer cancel()
				if _, err := p.Wait(ctx, TargetRef{ID: "a"}, tc.limit, InService); err == nil {
					t.Fatal("Wait on a target that never turns healthy returned no error")
				}
				synctest.Wait()
				p.mu.Lock()
				running := p.running
				p.mu.Unlock()
				if running {
					t.Error("the Poller's goroutine still runs after its last wait ended")
				}
			})
		})
	}
}

func TestOutOfRotation(t *testing.T) {
	tests := []struct {
		name string
		t    Target
		want bool
	}{
		{"unused", Target{State: StateUnused, InFlight: -1}, true},
		{"alb draining", Target{State: StateDraining, InFlight: -1}, false},
		{"embedded draining, idle", Target{State: StateDraining, InFlight: 0}, true},
		{"embedded draining, busy", Target{State: StateDraining, InFlight: 2}, false},
		{"embedded unhealthy, out, idle", Target{State: StateUnhealthy}, true},
		{"embedded fail-open unhealthy", Target{State: StateUnhealthy, InRotation: true}, false},
		{"alb healthy", Target{State: StateHealthy, InRotation: true, InFlight: -1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := OutOfRotation(tc.t); got != tc.want {
				t.Fatalf("OutOfRotation(%+v) = %v, want %v", tc.t, got, tc.want)
			}
		})
	}
}

// Whoever asks, and however often, the calls stay within PollBurst plus one
// per interval: that is what keeps a deploy within its share of an ALB's
// API budget. Reads after an idle spell are answered at once until the
// burst is spent; the next one waits for the bucket to refill.
func TestPoller_CallsStayWithinTheBudget(t *testing.T) {
	f := newFakeDriver()
	f.set("a", Target{State: StateHealthy, InRotation: true})
	clock := clockwork.NewFakeClock()
	p := NewPoller(f, clock, 2*time.Second)
	ctx := context.Background()

	for i := range PollBurst {
		if _, err := p.Read(ctx, TargetRef{ID: "a"}); err != nil { // at once: the fake clock stands still
			t.Fatalf("read %d: %v", i+1, err)
		}
	}
	r := make(chan error, 1)
	go func() { _, err := p.Read(ctx, TargetRef{ID: "a"}); r <- err }()
	bctx, cancel := context.WithTimeout(ctx, generous)
	defer cancel()
	if err := clock.BlockUntilContext(bctx, 1); err != nil { // the poll's sleep until the bucket has a call
		t.Fatalf("the poller did not wait past its burst (%d calls): %v", p.Calls(), err)
	}
	clock.Advance(2*time.Second - time.Millisecond)
	select {
	case err := <-r:
		t.Fatalf("a read past the burst was answered %v later, before an interval had passed (err %v)", 2*time.Second-time.Millisecond, err)
	default:
	}
	if n := p.Calls(); n != PollBurst {
		t.Fatalf("%d calls, want the burst (%d)", n, PollBurst)
	}
	clock.Advance(time.Millisecond)
	if err := <-r; err != nil {
		t.Fatalf("read past the burst: %v", err)
	}
	if n := p.Calls(); n != PollBurst+1 {
		t.Fatalf("%d calls, want %d", n, PollBurst+1)
	}
}

// A read joins the poll of the waits in progress: one call for all of them.
func TestPoller_ReadJoinsThePollInProgress(t *testing.T) {
	f := newFakeDriver()
	f.set("a", Target{State: StateDraining, InFlight: -1})
	f.set("b", Target{State: StateHealthy, InRotation: true, InFlight: -1})
	clock := clockwork.NewFakeClock()
	p := NewPoller(f, clock, time.Second)
	ctx := context.Background()

	ra := make(chan result, 1)
	go func() { tg, err := p.Wait(ctx, TargetRef{ID: "a"}, time.Minute, OutOfRotation); ra <- result{tg, err} }()
	waitCall(t, f)
	type reads struct {
		ts  []Target
		err error
	}
	rb := make(chan reads, 1)
	go func() { ts, err := p.Read(ctx, TargetRef{ID: "b"}, TargetRef{ID: "a"}); rb <- reads{ts, err} }()
	waitCond(t, "the read waiting", func() bool { return p.Waiting() == 2 })
	clock.BlockUntilContext(ctx, 2) // a's deadline and the poll's sleep
	clock.Advance(time.Second)
	got := <-rb
	if got.err != nil || len(got.ts) != 2 || got.ts[0].ID != "b" || got.ts[1].ID != "a" {
		t.Fatalf("read = %+v, %v: want b then a, in the order asked", got.ts, got.err)
	}
	if log := fmt.Sprint(f.callLog()); log != "[[a] [a b]]" {
		t.Fatalf("calls %s, want [[a] [a b]]: the read joins the wait's poll", log)
	}
	f.set("a", Target{State: StateUnused, InFlight: -1})
	clock.BlockUntilContext(ctx, 2)
	clock.Advance(time.Second)
	if r := <-ra; r.err != nil {
		t.Fatalf("a: %v", r.err)
	}
}

// A read returns the poll's error even when it is transient: the caller
// decides about retries, where a wait would just poll again.
func TestPoller_ReadReturnsATransientError(t *testing.T) {
	f := newFakeDriver()
	f.errs = []error{fmt.Errorf("describe: %w", ErrThrottled)}
	p := NewPoller(f, clockwork.NewFakeClock(), time.Second)
	if _, err := p.Read(context.Background(), TargetRef{ID: "a"}); !errors.Is(err, ErrThrottled) {
		t.Fatalf("err = %v, want ErrThrottled", err)
	}
}

package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mythex/mythex/internal/flocks"
)

// Who may act on the host, and when. The host lock (a flock, shared with
// `mythex agent bootstrap`) says who owns the host: a deploy's lease for its
// whole life, a recovery, a watchdog round, the bootstrap. Inside the agent
// a second lock, Agent.steps, closes the gap between a deploy step's lease
// check and its work: the step holds it shared across both, and a recovery
// takes it exclusively before it acts. So a lease that runs out while one of
// its steps is in progress is recovered only once the step has ended — the
// recovery then decides from what the step left — and a step never acts on
// a host that a recovery has already returned to its last good definition
// (and released to the watchdog).

// hooks are seams for tests that must pause an actor at a precise point.
type hooks struct {
	// afterLeaseCheck runs in a deploy step after its lease was checked
	// and before its work, with the step's name.
	afterLeaseCheck func(step string)
	// recoveryWaits runs when a recovery finds a deploy step in progress
	// and is about to wait for it, with the step's name.
	recoveryWaits func(step string)
}

// stepBegin is a deploy step's entry: it holds the host for the step
// (shared with other steps of the same lease, excluding a recovery and the
// watchdog), checks the lease and records the step as running on it — all
// or nothing. The step is on disk before it starts: an agent killed halfway
// knows, after its restart, what the deploy was doing. The step's end calls
// the returned function.
func (a *Agent) stepBegin(leaseID, step string) (end func(), err error) {
	a.steps.RLock()
	if err := a.hostLease.beginStep(leaseID, step); err != nil {
		a.steps.RUnlock()
		return nil, err
	}
	return a.steps.RUnlock, nil
}

// ownHostForRecovery takes the host from every deploy step before a
// recovery acts, waiting for a step still in progress (its lease just
// ended; the step itself is bounded by its own timeout or its caller's
// disconnect). step names the dead deploy's last step, for the log.
func (a *Agent) ownHostForRecovery(step string) (release func()) {
	if !a.steps.TryLock() {
		a.log.Warn("recovery waits for the deploy step still in progress to end", "step", step)
		if h := a.hooks.recoveryWaits; h != nil {
			h(step)
		}
		a.steps.Lock()
	}
	return a.steps.Unlock
}

// roundWait bounds how long a host lease request waits for a watchdog
// round in progress (a round's heal may stop a service within its grace
// period); past it the request is refused as before, and the deploy tries
// again.
const roundWait = 2 * time.Second

// roundGate lets a deploy that asks for the host lease go before the
// watchdog's next round. The watchdog only ever tries the host lock, and a
// deploy's lease request only tried it too: a watchdog whose rounds take
// longer than its interval (a loaded machine, W of milliseconds in tests)
// takes the lock again microseconds after it let go, and a deploy polling
// for it could miss every gap for as long as the rounds ran long. So a lease
// request that finds a round in progress waits for its end, and while one
// waits the watchdog skips its rounds.
type roundGate struct {
	mu      sync.Mutex
	inRound chan struct{} // closed when the round in progress ends; nil between rounds
	waiting int           // lease requests waiting for the host
}

// enter starts a round unless a lease request waits; false: skip it.
func (g *roundGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.waiting > 0 {
		return false
	}
	g.inRound = make(chan struct{})
	return true
}

// leave ends the round.
func (g *roundGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inRound != nil {
		close(g.inRound)
		g.inRound = nil
	}
}

// await registers a lease request and returns the end of the round in
// progress (nil when none runs) and the function that unregisters it.
func (g *roundGate) await() (<-chan struct{}, func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waiting++
	done := func() {
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
	}
	if g.inRound == nil {
		return nil, done
	}
	return g.inRound, done
}

// acquireHostLease takes the host lease; when a watchdog round holds the
// host it waits for the round's end (at most roundWait, or until ctx ends)
// and tries once more, the watchdog standing aside meanwhile.
func (a *Agent) acquireHostLease(ctx context.Context, holder string, ttl time.Duration) (Lease, error) {
	l, err := a.hostLease.acquire(holder, ttl)
	if !errors.Is(err, ErrLeaseHeld) {
		return l, err
	}
	round, done := a.gate.await()
	defer done()
	if round != nil {
		select {
		case <-round:
		case <-ctx.Done():
			return l, err
		case <-a.clock.After(roundWait):
			return l, err
		}
	}
	// No round runs now and none starts while this request waits: held
	// by a lease, a recovery or another process, this is refused again.
	return a.hostLease.acquire(holder, ttl)
}

// watchdogOwner is the lock the watchdog takes for a round: the host lock,
// and the host exclusively from deploy steps. A step runs only under a live
// lease, which holds the host lock, so the second never waits in practice;
// it makes the watchdog's heal and a step exclusive by construction, not by
// the lease's bookkeeping alone.
type watchdogOwner struct{ a *Agent }

// TryLock takes both without blocking; a *flocks.HeldError (errors.Is
// hostlock.ErrHeld) naming the holder when either is taken.
// A deploy waiting for the host lease makes the watchdog skip the round.
func (o watchdogOwner) TryLock(holder string) error {
	if !o.a.gate.enter() {
		return o.held("a deploy waiting for its host lease")
	}
	if err := o.a.lock.TryLock(holder); err != nil {
		o.a.gate.leave()
		return err
	}
	if !o.a.steps.TryLock() {
		_ = o.a.lock.Unlock()
		o.a.gate.leave()
		return o.held("a deploy step in progress")
	}
	return nil
}

// held is the error of a host taken by holder, as the host lock's own.
func (o watchdogOwner) held(holder string) error {
	return &flocks.HeldError{What: "host lock", Path: o.a.lock.Path(), Holder: holder}
}

// Unlock releases both and lets a waiting lease request in.
func (o watchdogOwner) Unlock() error {
	o.a.steps.Unlock()
	err := o.a.lock.Unlock()
	o.a.gate.leave()
	return err
}

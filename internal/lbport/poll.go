package lbport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
)

// DefaultPollInterval is how often a Poller asks the load balancer: every 2 s,
// not the 15 s of aws-sdk-go-v2's target waiters (whose first poll comes only
// after 15 s).
const DefaultPollInterval = 2 * time.Second

// PollBurst is how many Describe calls a Poller may make at once after an
// idle spell (a token bucket refilled one call per interval): enough for a
// deploy's steps to each start with an immediate poll, while over any span T
// the calls stay within PollBurst + T/interval.
const PollBurst = 3

// OutOfRotation is the drain handshake's condition: the load balancer will
// route no new request to the target and has none in flight to it. A target
// that is unused is out. Where the load balancer reports requests in flight
// (InFlight ≥ 0: the embedded LB, HAProxy) a target out of rotation with
// none in flight is out too; an ALB reports neither, so only unused (after
// its deregistration delay, or earlier once idle) proves it out.
func OutOfRotation(t Target) bool {
	if t.State == StateUnused {
		return true
	}
	return t.InFlight == 0 && !t.InRotation
}

// InService is the condition of a target put back: healthy and in
// rotation.
func InService(t Target) bool { return t.State == StateHealthy && t.InRotation }

// Poller waits on conditions of targets through one Driver, and is the one
// way its owner asks the load balancer about targets. However many targets
// are being waited on or read at once, it makes one Describe call per poll
// for all of them (an ALB's Describe* calls share one token bucket per
// account and Region with every other tool). While anyone waits it polls
// every interval; a wait or read that comes after an idle spell is polled
// at once, within a budget of its own: in any span T it makes at most
// PollBurst + T/interval calls, whatever its callers do. Transient errors
// (throttling, network) are retried at the next poll and never end a wait
// by themselves; other errors end every wait of that poll. Its one
// goroutine runs only while anyone waits: it ends with the last wait, so
// its owner returns with nothing of it left running. Safe for concurrent
// use.
type Poller struct {
	d           Driver
	clock       clockwork.Clock
	interval    time.Duration
	callTimeout time.Duration

	calls     atomic.Int64
	transient atomic.Int64

	mu      sync.Mutex
	waiters map[*waiter]struct{}
	running bool
	// left wakes the loop's sleep when a wait or read left without the
	// loop deciding it (its context ended, its limit passed): with no one
	// left waiting, the loop ends now rather than after its sleep, so the
	// Poller's goroutine does not outlive its last wait.
	left chan struct{}
	// tokens are the calls the Poller may make now (at most PollBurst),
	// as of refilled.
	tokens   float64
	refilled time.Time
}

// waiter is one Wait (refs of one target) or one Read (any number).
type waiter struct {
	refs []TargetRef
	// cond ends the wait when it holds for what the poll reported. It runs
	// on the Poller's goroutine, one poll after the other.
	cond func([]Target) bool
	// read: the first answer ends it, an error too, transient or not.
	read bool
	done chan error // buffered; nil error: cond held

	// Guarded by Poller.mu.
	last    []Target
	seen    bool
	lastErr error
}

// NewPoller returns a Poller over d polling every interval (0:
// DefaultPollInterval) on clock (nil: the real clock).
func NewPoller(d Driver, clock clockwork.Clock, interval time.Duration) *Poller {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	return &Poller{d: d, clock: clock, interval: interval, callTimeout: 60 * time.Second, waiters: map[*waiter]struct{}{},
		left: make(chan struct{}, 1), tokens: PollBurst, refilled: clock.Now()}
}

// Interval is the time between two polls while anyone waits.
func (p *Poller) Interval() time.Duration { return p.interval }

// Calls is how many Describe calls the Poller has made.
func (p *Poller) Calls() int64 { return p.calls.Load() }

// TransientErrors is how many polls failed with a transient error
// (throttling, network) and were retried.
func (p *Poller) TransientErrors() int64 { return p.transient.Load() }

// Wait polls until cond holds for ref and returns what the load balancer
// last reported. cond runs on the Poller's goroutine, once per poll, so it
// may keep state across calls; it must not block. Wait fails when limit
// passes (the error says what the load balancer last reported, or its last
// error), when ctx ends (its cause), or when a poll fails with an error that
// is not transient.
func (p *Poller) Wait(ctx context.Context, ref TargetRef, limit time.Duration, cond func(Target) bool) (Target, error) {
	w := &waiter{refs: []TargetRef{ref}, cond: func(ts []Target) bool { return cond(ts[0]) }, done: make(chan error, 1)}
	ts, err := p.await(ctx, w, p.clock.After(limit))
	var t Target
	if len(ts) == 1 {
		t = ts[0]
	}
	if err != errLimit {
		return t, err
	}
	switch {
	case w.lastErr != nil:
		return t, fmt.Errorf("not within %v; last error: %w", limit, w.lastErr)
	case !w.seen:
		return t, fmt.Errorf("not within %v; the load balancer has not answered", limit)
	}
	return t, fmt.Errorf("not within %v; it reports %s", limit, Describe(t))
}

// Read reports refs, in the order given, from the next poll: with whatever
// else is being waited on, at once when the Poller is idle and within its
// budget. Unlike Wait it returns the poll's error, transient or not, so the
// caller decides about retries. It ends early only when ctx does.
func (p *Poller) Read(ctx context.Context, refs ...TargetRef) ([]Target, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	w := &waiter{refs: refs, cond: func([]Target) bool { return true }, read: true, done: make(chan error, 1)}
	return p.await(ctx, w, nil)
}

// errLimit is await's answer when its limit passed.
var errLimit = errors.New("limit passed")

// await adds w to the next polls until it is decided, ctx ends or limit
// fires (errLimit), and returns what was last reported for its refs.
func (p *Poller) await(ctx context.Context, w *waiter, limit <-chan time.Time) ([]Target, error) {
	p.mu.Lock()
	p.waiters[w] = struct{}{}
	if !p.running {
		p.running = true
		go p.loop()
	}
	p.mu.Unlock()
	var err error
	select {
	case err = <-w.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return w.last, err
	case <-ctx.Done():
		err = context.Cause(ctx)
	case <-limit:
		err = errLimit
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.waiters, w)
	if len(p.waiters) == 0 {
		select {
		case p.left <- struct{}{}:
		default: // the loop has a wake-up pending already
		}
	}
	select {
	case err = <-w.done: // decided meanwhile: that wins
	default:
	}
	return w.last, err
}

// Waiting is how many waits and reads are in progress.
func (p *Poller) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiters)
}

// loop polls while anyone waits. It is the only goroutine of the Poller.
func (p *Poller) loop() {
	for {
		p.mu.Lock()
		if len(p.waiters) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		if wait := p.take(); wait > 0 {
			// Over budget: whoever comes meanwhile joins the next poll.
			p.mu.Unlock()
			if p.sleep(wait) {
				return
			}
			continue
		}
		var refs []TargetRef
		index := map[TargetRef]int{}
		batch := map[*waiter]bool{}
		for w := range p.waiters {
			batch[w] = true
			for _, r := range w.refs {
				if _, ok := index[r]; !ok {
					index[r] = len(refs)
					refs = append(refs, r)
				}
			}
		}
		p.mu.Unlock()

		ts, err := p.describe(refs)
		if err == nil && len(ts) != len(refs) {
			err = &UnexpectedError{Op: "describe", Detail: fmt.Sprintf("asked for %d targets, got %d", len(refs), len(ts))}
		}
		transient := err != nil && IsTransient(err)
		if transient {
			p.transient.Add(1)
		}
		p.mu.Lock()
		for w := range p.waiters {
			if !batch[w] {
				continue // joined during the call: next poll
			}
			if err != nil {
				w.lastErr = err
				if w.read || !transient {
					delete(p.waiters, w)
					w.done <- err
				}
				continue
			}
			w.last = make([]Target, len(w.refs))
			for i, r := range w.refs {
				w.last[i] = ts[index[r]]
			}
			w.seen, w.lastErr = true, nil
			if w.cond(w.last) {
				delete(p.waiters, w)
				w.done <- nil
			}
		}
		idle := len(p.waiters) == 0
		p.mu.Unlock()
		if !idle && p.sleep(p.interval) {
			return
		}
	}
}

// sleep waits d on the clock, unless everyone waiting leaves meanwhile:
// then it marks the loop stopped and reports true, and the loop returns. A
// wait that comes during the sleep does not shorten it.
func (p *Poller) sleep(d time.Duration) (stopped bool) {
	timer := p.clock.After(d)
	for {
		select {
		case <-timer:
			return false
		case <-p.left:
			p.mu.Lock()
			if len(p.waiters) == 0 {
				p.running = false
				p.mu.Unlock()
				return true
			}
			p.mu.Unlock()
		}
	}
}

// take spends a call from the budget and returns 0, or returns how long
// until there is one. Called with p.mu held.
func (p *Poller) take() time.Duration {
	now := p.clock.Now()
	p.tokens = min(PollBurst, p.tokens+float64(now.Sub(p.refilled))/float64(p.interval))
	p.refilled = now
	if p.tokens < 1 {
		return time.Duration((1 - p.tokens) * float64(p.interval))
	}
	p.tokens--
	return 0
}

func (p *Poller) describe(refs []TargetRef) (ts []Target, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.callTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = &UnexpectedError{Op: "describe", Detail: fmt.Sprintf("driver panicked: %v", r)}
		}
	}()
	p.calls.Add(1)
	return p.d.Describe(ctx, refs...)
}

// Describe says what the load balancer reports of t in a few words, e.g.
// "unhealthy Target.FailedHealthChecks, out of rotation, 0 in flight".
func Describe(t Target) string {
	s := t.State.String()
	if t.Reason != ReasonNone {
		s += " " + string(t.Reason)
	}
	if t.Checks != "" {
		s += " (" + t.Checks + ")"
	}
	if t.State == StateUnused {
		return s
	}
	if t.InRotation {
		s += ", in rotation"
	} else {
		s += ", out of rotation"
	}
	if t.InFlight >= 0 {
		s += fmt.Sprintf(", %d in flight", t.InFlight)
	}
	return s
}

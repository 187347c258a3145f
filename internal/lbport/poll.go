package lbport

import (
	"context"
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

// Poller waits on conditions of targets through one Driver. However many
// targets are being waited on at once, it makes one Describe call per poll
// for all of them (an ALB's Describe* calls share one token bucket per
// account and Region with every other tool). The first poll after an idle
// spell is immediate; the next ones come every interval. Transient errors
// (throttling, network) are retried at the next poll and never end a wait by
// themselves; other errors end every wait of that poll. Safe for concurrent
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
}

type waiter struct {
	ref  TargetRef
	cond func(Target) bool
	done chan error // buffered; nil error: cond held

	// Guarded by Poller.mu.
	last    Target
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
	return &Poller{d: d, clock: clock, interval: interval, callTimeout: 60 * time.Second, waiters: map[*waiter]struct{}{}}
}

// Calls is how many Describe calls the Poller has made.
func (p *Poller) Calls() int64 { return p.calls.Load() }

// TransientErrors is how many polls failed with a transient error
// (throttling, network) and were retried.
func (p *Poller) TransientErrors() int64 { return p.transient.Load() }

// Wait polls until cond holds for ref and returns what the load balancer
// last reported. It fails when limit passes (the error says what the load
// balancer last reported, or its last error), when ctx ends (its cause), or
// when a poll fails with an error that is not transient.
func (p *Poller) Wait(ctx context.Context, ref TargetRef, limit time.Duration, cond func(Target) bool) (Target, error) {
	w := &waiter{ref: ref, cond: cond, done: make(chan error, 1)}
	deadline := p.clock.After(limit)
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
	case <-deadline:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.waiters, w)
	select {
	case err = <-w.done: // decided meanwhile: that wins
		return w.last, err
	default:
	}
	if err != nil {
		return w.last, err
	}
	switch {
	case w.lastErr != nil:
		return w.last, fmt.Errorf("not within %v; last error: %w", limit, w.lastErr)
	case !w.seen:
		return w.last, fmt.Errorf("not within %v; the load balancer has not answered", limit)
	}
	return w.last, fmt.Errorf("not within %v; it reports %s", limit, Describe(w.last))
}

// Waiting is how many waits are in progress.
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
		var refs []TargetRef
		index := map[TargetRef]int{}
		for w := range p.waiters {
			if _, ok := index[w.ref]; !ok {
				index[w.ref] = len(refs)
				refs = append(refs, w.ref)
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
			if _, ok := index[w.ref]; !ok {
				continue // joined during the call: next poll
			}
			if err != nil {
				w.lastErr = err
				if !transient {
					delete(p.waiters, w)
					w.done <- err
				}
				continue
			}
			w.last, w.seen, w.lastErr = ts[index[w.ref]], true, nil
			if w.cond(w.last) {
				delete(p.waiters, w)
				w.done <- nil
			}
		}
		idle := len(p.waiters) == 0
		if idle {
			p.running = false
		}
		p.mu.Unlock()
		if idle {
			return
		}
		<-p.clock.After(p.interval)
	}
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

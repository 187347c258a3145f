package deploy

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/lbport"
)

// lbView is the deploy's load balancer: the driver, plus the propagation
// grace (load_balancer.propagation_margin). A target the load balancer
// reports unused still reads as draining for the grace after it was first
// seen unused — an ALB's data plane keeps routing to a deregistered target
// for a while after its API says so. It is itself an lbport.Driver, so the
// deploy's Poller watches every host of a batch through one Describe call
// per poll.
type lbView struct {
	d     lbport.Driver
	grace time.Duration
	clock clockwork.Clock

	mu       sync.Mutex
	outSince map[lbport.TargetRef]time.Time
}

var _ lbport.Driver = (*lbView)(nil)

func newLBView(d lbport.Driver, grace time.Duration, clock clockwork.Clock) *lbView {
	return &lbView{d: d, grace: grace, clock: clock, outSince: map[lbport.TargetRef]time.Time{}}
}

// ref is h's target in the load balancer: Host.Ref, else its name and
// target.
func ref(h Host) lbport.TargetRef {
	if h.Ref.ID != "" {
		return h.Ref
	}
	return lbport.TargetRef{ID: h.Name, Address: h.Target}
}

// Kind is the driver's.
func (v *lbView) Kind() string { return v.d.Kind() }

// Describe reports the targets in one call; within the grace a target just
// unused reads as draining.
func (v *lbView) Describe(ctx context.Context, refs ...lbport.TargetRef) ([]lbport.Target, error) {
	ts, err := v.d.Describe(ctx, refs...)
	if err != nil || len(ts) != len(refs) {
		return ts, fromLB(err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for i, r := range refs {
		t := ts[i]
		if t.State != lbport.StateUnused || v.grace <= 0 {
			delete(v.outSince, r)
			continue
		}
		since, ok := v.outSince[r]
		if !ok {
			since = v.clock.Now()
			v.outSince[r] = since
		}
		if v.clock.Since(since) < v.grace {
			ts[i] = lbport.Target{ID: t.ID, Address: t.Address, State: lbport.StateDraining, Reason: lbport.ReasonDeregistrationInProgress,
				Description: "propagation grace: the load balancer may still route to it for " + v.grace.String(), InFlight: -1}
		}
	}
	return ts, nil
}

// graceLeft is how long r, which the load balancer reported unused, still
// reads as draining; 0 when it is not in its grace.
func (v *lbView) graceLeft(r lbport.TargetRef) time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	since, ok := v.outSince[r]
	if !ok {
		return 0
	}
	return max(v.grace-v.clock.Since(since), 0)
}

// Register registers the target; its grace starts anew next time.
func (v *lbView) Register(ctx context.Context, r lbport.TargetRef) error {
	v.mu.Lock()
	delete(v.outSince, r)
	v.mu.Unlock()
	return fromLB(v.d.Register(ctx, r))
}

// Deregister deregisters the target.
func (v *lbView) Deregister(ctx context.Context, r lbport.TargetRef) error {
	return fromLB(v.d.Deregister(ctx, r))
}

// Settings are the driver's.
func (v *lbView) Settings(ctx context.Context) (lbport.Settings, error) { return v.d.Settings(ctx) }

// Apply is the driver's.
func (v *lbView) Apply(ctx context.Context, s lbport.Settings) error { return v.d.Apply(ctx, s) }

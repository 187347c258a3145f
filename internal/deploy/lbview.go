package deploy

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/lbport"
)

// lbView is the deploy's view of the load balancer through its driver. It
// adds the propagation grace (load_balancer.propagation_margin): a target the
// load balancer reports unused still reads as draining for the grace after it
// was first seen unused — an ALB's data plane keeps routing to a deregistered
// target for a while after its API says so.
type lbView struct {
	d     lbport.Driver
	grace time.Duration
	clock clockwork.Clock

	mu       sync.Mutex
	outSince map[string]time.Time
}

func newLBView(d lbport.Driver, grace time.Duration, clock clockwork.Clock) *lbView {
	return &lbView{d: d, grace: grace, clock: clock, outSince: map[string]time.Time{}}
}

// ref is h's target in the load balancer: Host.Ref, else its name and
// target.
func ref(h Host) lbport.TargetRef {
	if h.Ref.ID != "" {
		return h.Ref
	}
	return lbport.TargetRef{ID: h.Name, Address: h.Target}
}

// Target reports h's target (one Describe call), within the grace a target
// just unused as draining.
func (v *lbView) Target(ctx context.Context, h Host) (lbport.Target, error) {
	t, err := lbport.Describe1(ctx, v.d, ref(h))
	if err != nil {
		return t, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if t.State != lbport.StateUnused || v.grace <= 0 {
		delete(v.outSince, h.Name)
		return t, nil
	}
	since, ok := v.outSince[h.Name]
	if !ok {
		since = v.clock.Now()
		v.outSince[h.Name] = since
	}
	if v.clock.Since(since) < v.grace {
		return lbport.Target{ID: t.ID, Address: t.Address, State: lbport.StateDraining, Reason: lbport.ReasonDeregistrationInProgress,
			Description: "propagation grace: the load balancer may still route to it for " + v.grace.String(), InFlight: -1}, nil
	}
	return t, nil
}

// Register registers h's target.
func (v *lbView) Register(ctx context.Context, h Host) error {
	v.mu.Lock()
	delete(v.outSince, h.Name)
	v.mu.Unlock()
	return v.d.Register(ctx, ref(h))
}

// Deregister deregisters h's target.
func (v *lbView) Deregister(ctx context.Context, h Host) error {
	return v.d.Deregister(ctx, ref(h))
}

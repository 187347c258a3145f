package deploy

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/lbport"
)

// PortLB is the LB of the deploy over an lbport.Driver (kind alb). It maps
// host names to the driver's targets and adds the propagation grace: a target
// the load balancer reports unused still reads as registered, out of
// rotation, for Grace after it was first seen unused — an ALB's data plane
// keeps routing to a deregistered target for a while after its API says so.
// A driver that does not report requests in flight (an ALB) reads as busy
// until the target is unused: only that proves it drained.
type PortLB struct {
	// D is the driver.
	D lbport.Driver
	// Refs maps each host's name to its target in the load balancer.
	Refs map[string]lbport.TargetRef
	// Grace is load_balancer.propagation_margin.
	Grace time.Duration
	// Clock times the grace. Default: the real clock.
	Clock clockwork.Clock

	mu       sync.Mutex
	outSince map[string]time.Time
}

var _ LB = (*PortLB)(nil)

func (p *PortLB) ref(id string) lbport.TargetRef {
	if r, ok := p.Refs[id]; ok {
		return r
	}
	return lbport.TargetRef{ID: id}
}

func (p *PortLB) now() time.Time {
	if p.Clock == nil {
		return time.Now()
	}
	return p.Clock.Now()
}

// Target reports host id's target (one Describe call).
func (p *PortLB) Target(ctx context.Context, id string) (TargetView, error) {
	t, err := lbport.Describe1(ctx, p.D, p.ref(id))
	if err != nil {
		return TargetView{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.State != lbport.StateUnused {
		delete(p.outSince, id)
		inFlight := t.InFlight
		if inFlight < 0 && !t.InRotation {
			inFlight = 1 // not reported: not provably idle until unused
		} else if inFlight < 0 {
			inFlight = 0 // in rotation: the count decides nothing
		}
		return TargetView{Registered: true, State: t.State.String(), InRotation: t.InRotation, InFlight: inFlight, Reason: string(t.Reason)}, nil
	}
	if p.Grace > 0 {
		if p.outSince == nil {
			p.outSince = map[string]time.Time{}
		}
		since, ok := p.outSince[id]
		if !ok {
			since = p.now()
			p.outSince[id] = since
		}
		if p.now().Sub(since) < p.Grace {
			return TargetView{Registered: true, State: t.State.String(), Reason: "propagation grace (" + p.Grace.String() + ")", InFlight: 1}, nil
		}
	}
	return TargetView{State: t.State.String(), Reason: string(t.Reason)}, nil
}

// Register registers host id's target.
func (p *PortLB) Register(ctx context.Context, id, _ string) error {
	p.mu.Lock()
	delete(p.outSince, id)
	p.mu.Unlock()
	return p.D.Register(ctx, p.ref(id))
}

// Deregister deregisters host id's target.
func (p *PortLB) Deregister(ctx context.Context, id string) error {
	return p.D.Deregister(ctx, p.ref(id))
}

package deploy

import (
	"context"
	"fmt"

	"github.com/mythex/mythex/internal/lbport"
)

// waitDrained waits, at most drain.max, until the load balancer reports the
// target out of rotation with nothing in flight (or no longer registered).
//
// A load balancer with no deregistration timer of its own implements
// lbport.SessionCutter (HAProxy: a drained server keeps its sessions as long
// as they last); for it the deploy enforces load_balancer.deregistration_delay:
// a deregistered target still serving requests at the delay has its sessions
// shut down, and the deploy says so in a note. Load balancers that end
// draining themselves (an ALB, mythex lb) are only waited for.
func (d *Deployer) waitDrained(ctx context.Context, st *hostState, p Phase) (lbport.Target, error) {
	cfg := d.o.Config
	idle := lbport.OutOfRotation
	cutter, ok := d.o.LB.(lbport.SessionCutter)
	bound := cfg.LoadBalancer.DeregistrationDelay
	if !ok || !st.deregistered || bound >= cfg.Drain.Max {
		return d.waitTarget(ctx, st.h, p, cfg.Drain.Max, idle)
	}
	begin := d.clock.Now()
	t, err := d.waitTarget(ctx, st.h, p, bound, idle)
	if err == nil || ctx.Err() != nil {
		return t, err
	}
	if t.Registered() && !t.InRotation && t.InFlight > 0 {
		if cerr := cutter.CutSessions(ctx, ref(st.h)); cerr != nil {
			return t, fmt.Errorf("%d requests still in flight at load_balancer.deregistration_delay (%v), and shutting down their sessions failed: %w", t.InFlight, bound, cerr)
		}
		d.emit(st.h.Name, p, EventNote, 0, fmt.Sprintf(
			"%d requests still in flight at load_balancer.deregistration_delay (%v): the load balancer has no deregistration timer, so mythex shut down its sessions to %s; those requests failed",
			t.InFlight, bound, st.h.Name))
	}
	return d.waitTarget(ctx, st.h, p, cfg.Drain.Max-d.clock.Since(begin), idle)
}

package deploy

import (
	"context"
	"fmt"
	"time"

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
	cutter, ok := d.o.LB.(lbport.SessionCutter)
	bound := cfg.LoadBalancer.DeregistrationDelay
	if !ok || !st.deregistered || bound >= cfg.Drain.Max {
		return d.waitOut(ctx, st.h, p, cfg.Drain.Max)
	}
	begin := d.clock.Now()
	t, err := d.waitOut(ctx, st.h, p, bound)
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
	return d.waitOut(ctx, st.h, p, cfg.Drain.Max-d.clock.Since(begin))
}

// waitOut waits, at most limit, until the load balancer reports h's target
// out of rotation and idle. Once it reports the target unused, what is left
// of the propagation grace is waited on the clock, not in polls that could
// only say "draining", and one last poll confirms it.
func (d *Deployer) waitOut(ctx context.Context, h Host, p Phase, limit time.Duration) (lbport.Target, error) {
	r := ref(h)
	begin := d.clock.Now()
	t, err := d.waitTarget(ctx, h, p, limit, func(t lbport.Target) bool {
		return lbport.OutOfRotation(t) || d.lb.graceLeft(r) > 0
	})
	left := d.lb.graceLeft(r)
	if err != nil || left == 0 {
		return t, err
	}
	done := d.whileWaiting(ctx, h.Name, p, func(context.Context) string {
		return fmt.Sprintf("the load balancer reports it unused; propagation grace (load_balancer.propagation_margin) %v left",
			d.lb.graceLeft(r).Round(100*time.Millisecond))
	})
	rest := limit - d.clock.Since(begin)
	select {
	case <-ctx.Done():
	case <-d.clock.After(min(left, rest)):
	}
	done()
	switch {
	case ctx.Err() != nil:
		return t, context.Cause(ctx)
	case left > rest:
		return t, fmt.Errorf("not within %v; the load balancer reports it unused, but the propagation grace (load_balancer.propagation_margin %v) outlasts the bound",
			limit.Round(time.Millisecond), d.o.Config.LoadBalancer.PropagationMargin)
	}
	return d.waitTarget(ctx, h, p, limit-d.clock.Since(begin), lbport.OutOfRotation)
}

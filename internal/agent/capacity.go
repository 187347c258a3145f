package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
)

// Capacity is what a recovery needs to keep the fleet's capacity, as the
// deploy's live capacity check does (deploy.min_in_service): before it takes
// a host that serves — healthy and in rotation at the load balancer — out of
// rotation to restore it, the other targets the load balancer reports
// healthy and in rotation must number at least MinInService. Zero value: no
// check (a host without a fleet file, or with --no-lb).
type Capacity struct {
	// Peers are the fleet's other targets.
	Peers []lbport.TargetRef
	// MinInService is how many of them must stay in service (0: no check).
	MinInService int
	// Wait bounds the wait for enough peers in service, and for the target
	// to be reported healthy again once restored; past it the recovery
	// fails with the host untouched (and is tried again with backoff).
	Wait time.Duration
	// DrainWait bounds the wait for the target to leave rotation and finish
	// its in-flight requests (drain.max).
	DrainWait time.Duration
	// Poll is how often the load balancer is asked. Default 100ms.
	Poll time.Duration
}

// CapacityFrom derives a host's Capacity from the fleet's config; ref names
// a host's target in the load balancer. Errors: a bad
// deploy.min_in_service (a *fleet.FieldError).
func CapacityFrom(cfg *fleet.Config, host string, ref func(fleet.Host) lbport.TargetRef) (Capacity, error) {
	need, err := cfg.Deploy.InService(len(cfg.Hosts))
	if err != nil {
		return Capacity{}, err
	}
	hc := cfg.LoadBalancer.HealthCheck
	c := Capacity{
		MinInService: need,
		Wait:         2*time.Duration(hc.HealthyThreshold)*(hc.Interval+hc.Timeout) + hc.Interval,
		DrainWait:    cfg.Drain.Max,
		Poll:         min(max(hc.Interval/10, 5*time.Millisecond), 100*time.Millisecond),
	}
	for _, h := range cfg.Hosts {
		if h.Name != host {
			c.Peers = append(c.Peers, ref(h))
		}
	}
	return c, nil
}

// errCapacity: the recovery would have taken a serving host out of rotation
// with too few other targets in service; it left the host as it was.
var errCapacity = errors.New("not enough capacity to take this host out of rotation")

// leaveRotation takes the host out of rotation before a recovery that
// stops what it serves, when the load balancer routes to it — in rotation,
// healthy or not (an unhealthy target still gets requests while an ALB
// fails open, or while it is being registered again after a failed attempt
// of this recovery), or with requests in flight. For a host in service
// (healthy and in rotation: capacity) it waits (bounded) until enough peers
// are in service, deregisters the target and looks again — a peer's
// recovery may have left at the same moment: then the target is registered
// again and the recovery fails, to be tried again; a host routed to but not
// in service is deregistered at once. Then it waits until the target is out
// of rotation with nothing in flight. out reports whether it deregistered the target (the recovery must
// register it again, whatever happens next). A load balancer that cannot
// report (lbport.ErrUnsupported) is not asked.
func (a *Agent) leaveRotation(ctx context.Context) (out bool, err error) {
	rc := a.cfg.Recovery
	c := rc.Capacity
	if rc.LB == nil || c.MinInService <= 0 {
		return false, nil
	}
	self := lbport.TargetRef{ID: rc.TargetID, Address: rc.TargetAddress}
	t, err := lbport.Describe1(ctx, rc.LB, self)
	if errors.Is(err, lbport.ErrUnsupported) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ask the load balancer whether %s serves: %w", rc.TargetID, err)
	}
	if !t.InRotation && t.InFlight <= 0 {
		return false, nil // out already (drained by the dead deploy): it costs nothing
	}
	poll := c.Poll
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	// Only a host in service is capacity: one the LB routes to while it
	// fails its checks (an LB failing open) serves nobody well, so it is
	// drained without waiting for its peers — waiting would keep it
	// broken in rotation for as long.
	serving := lbport.InService(t)
	deadline := a.clock.Now().Add(c.Wait)
	for serving {
		n, outs := a.peersInService(ctx, c.Peers)
		if fleet.CapacityHolds(n, c.MinInService) {
			break
		}
		if !a.clock.Now().Before(deadline) {
			return false, fmt.Errorf("%w: %d other target(s) healthy and in rotation, deploy.min_in_service needs %d; out: %s (waited %v; the host keeps serving, the recovery is tried again)",
				errCapacity, n, c.MinInService, strings.Join(outs, ", "), c.Wait)
		}
		a.log.Warn("recovery waits for capacity before taking the host out of rotation", "in_service", n, "need", c.MinInService, "out", strings.Join(outs, ", "))
		if err := a.sleep(ctx, poll); err != nil {
			return false, err
		}
	}
	if err := rc.LB.Deregister(ctx, self); err != nil {
		return false, fmt.Errorf("deregister %s before restoring it: %w", rc.TargetID, err)
	}
	if n, outs := a.peersInService(ctx, c.Peers); serving && !fleet.CapacityHolds(n, c.MinInService) {
		// Another host left rotation between the look and the
		// deregistration: this one goes back and tries again later.
		return true, fmt.Errorf("%w: another target left rotation at the same moment (out: %s); %s goes back into rotation and the recovery is tried again",
			errCapacity, strings.Join(outs, ", "), rc.TargetID)
	}
	drainBy := a.clock.Now().Add(c.DrainWait)
	for {
		t, err := lbport.Describe1(ctx, rc.LB, self)
		if err == nil && !t.InRotation && t.InFlight <= 0 {
			return true, nil
		}
		if !a.clock.Now().Before(drainBy) {
			// drain.max is the bound on in-flight requests: past it the
			// restore goes on, as the deploy's drain does.
			a.log.Warn("recovery: the target did not drain within drain.max; restoring anyway", "target", rc.TargetID, "lb", lbport.Describe(t), "err", err)
			return true, nil
		}
		if err := a.sleep(ctx, poll); err != nil {
			return true, err
		}
	}
}

// peersInService counts the peers the load balancer reports healthy and in
// rotation and names the others; a load balancer that cannot be asked
// counts none.
func (a *Agent) peersInService(ctx context.Context, peers []lbport.TargetRef) (int, []string) {
	if len(peers) == 0 {
		return 0, nil
	}
	ts, err := a.cfg.Recovery.LB.Describe(ctx, peers...)
	if err != nil || len(ts) != len(peers) {
		return 0, []string{fmt.Sprintf("every peer (load balancer: %v)", err)}
	}
	n := 0
	var outs []string
	for i, t := range ts {
		if lbport.InService(t) {
			n++
			continue
		}
		outs = append(outs, fmt.Sprintf("%s (%s)", peers[i].ID, lbport.Describe(t)))
	}
	return n, outs
}

// waitInService waits, bounded by the capacity's Wait, until the load
// balancer reports the target healthy and in rotation again.
func (a *Agent) waitInService(ctx context.Context) error {
	rc := a.cfg.Recovery
	c := rc.Capacity
	if rc.LB == nil || c.MinInService <= 0 {
		return nil
	}
	self := lbport.TargetRef{ID: rc.TargetID, Address: rc.TargetAddress}
	poll := c.Poll
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	deadline := a.clock.Now().Add(c.Wait)
	for {
		t, err := lbport.Describe1(ctx, rc.LB, self)
		if errors.Is(err, lbport.ErrUnsupported) || (err == nil && lbport.InService(t)) {
			return nil
		}
		if !a.clock.Now().Before(deadline) {
			return fmt.Errorf("the load balancer did not report %s healthy and in rotation within %v: %s (err %v)", rc.TargetID, c.Wait, lbport.Describe(t), err)
		}
		if err := a.sleep(ctx, poll); err != nil {
			return err
		}
	}
}

func (a *Agent) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-a.clock.After(d):
		return nil
	}
}

package timing

import (
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// The timeline of one service leaving rotation, t = 0 when its termination
// starts (a deploy drains the host, an orchestrator terminates the pod):
//
//	0 ........ pre_stop ........ P: SIGTERM; health answers 503
//	P ........ serve_period .... P+D: the listener closes ("close")
//	P+D ...... shutdown_timeout  P+D+S: in-flight requests done, exit
//	G: SIGKILL, whatever is still running (Kubernetes counts pre_stop in G)
//
// The LB stops routing new requests ("route stop") either when its health
// checks notice the 503s or some time after the service is deregistered; see
// removalOf. Requests that reach the service after close and before route stop
// reach nothing (502).

// closeAt is when the service stops accepting connections: pre_stop plus the
// serve period, unless SIGKILL at the stop grace period comes first.
func closeAt(c *fleet.Config) time.Duration {
	return min(c.Drain.PreStop+c.Drain.ServePeriod, c.Backend.StopGracePeriod)
}

// removalPath is how the LB learns that a service is leaving.
type removalPath int

const (
	// byHealthCheck: the service's health check starts failing at SIGTERM and
	// the LB marks it unhealthy after unhealthy_threshold failed checks.
	byHealthCheck removalPath = iota
	// byDeregistration: the service (ip target) or its place on the node
	// (instance target) is deregistered when termination starts, and the LB
	// stops routing once that has propagated.
	byDeregistration
)

// removal is when the LB stops routing to a terminating service.
type removal struct {
	path removalPath
	// at is when the LB stops routing by the expected numbers (health checks,
	// propagation_margin, an ALB ip target's deregistration delay); overlap
	// fails if the service closes by then.
	at time.Duration
	// worst is the latest the LB may still route to it by a conservative
	// bound (propagation_max); overlap is marginal if the service closes by
	// then. worst ≥ at.
	worst time.Duration
	// atIsDeregDelay says at comes from the ALB's deregistration delay.
	atIsDeregDelay bool
}

// detect is the health-check part of the route stop: the next check can be up
// to one interval away, the LB needs unhealthy_threshold failed checks, and the
// last may take up to the timeout (detect = I·U + T, docs/check.md).
func detect(c *fleet.Config) time.Duration {
	hc := c.LoadBalancer.HealthCheck
	return time.Duration(hc.UnhealthyThreshold)*hc.Interval + hc.Timeout
}

// propagationMax is propagation_max, or propagation_margin when that is larger
// (0 means "same as propagation_margin").
func propagationMax(c *fleet.Config) time.Duration {
	return max(c.LoadBalancer.PropagationMax, c.LoadBalancer.PropagationMargin)
}

// pathOf picks the removal path. drain_mode deregister: deregistration at
// t = 0 is what takes the service out. health and both: the health check is
// what must take it out — with both, a deploy also deregisters (and waits for
// the LB to confirm), but any other SIGTERM (docker stop, a watchdog heal, a
// reboot) has only the health check, and overlap must hold for every stop.
func pathOf(c *fleet.Config) removalPath {
	if c.Deploy.DrainMode == fleet.DrainModeDeregister {
		return byDeregistration
	}
	return byHealthCheck
}

// healthPropagates reports whether the LB learns a health-check verdict
// through a control plane, so that propagation_margin adds to detection. An
// ALB's health checks run on its own nodes, which stop routing to a target
// they found unhealthy themselves: the propagation margin belongs to the
// deregistration path only. A proxy of kind other (Traefik reading Docker's
// health status, ingress-nginx reading endpoints) learns through its
// discovery, so its lag counts on both paths.
func healthPropagates(c *fleet.Config) bool {
	return c.LoadBalancer.Kind != fleet.KindALB
}

// removalOf computes when the LB stops routing to a terminating service.
func removalOf(c *fleet.Config) removal {
	lb := &c.LoadBalancer
	if pathOf(c) == byHealthCheck {
		at := c.Drain.PreStop + detect(c)
		if !healthPropagates(c) {
			return removal{path: byHealthCheck, at: at, worst: at}
		}
		return removal{path: byHealthCheck, at: at + lb.PropagationMargin, worst: at + propagationMax(c)}
	}
	r := removal{path: byDeregistration, at: lb.PropagationMargin, worst: propagationMax(c)}
	// An ALB keeps a deregistered ip target draining for the deregistration
	// delay, and its deregistration propagates asynchronously: until the delay
	// ends it may still route new requests there. Public incidents happened
	// with a preStop a few seconds short of the delay, so closing before it
	// ends fails (the AWS LB controller's guidance: preStop sleep longer than
	// the deregistration delay). With instance targets the node stays
	// registered and the delay does not govern a single service's removal
	// (aws-load-balancer-controller#2106).
	if lb.Kind == fleet.KindALB && lb.TargetType == fleet.TargetTypeIP && lb.DeregistrationDelay > r.at {
		// The delay is the bound: once it ends the target is gone, so
		// propagation_max does not add a marginal band beyond it.
		r.at, r.worst, r.atIsDeregDelay = lb.DeregistrationDelay, lb.DeregistrationDelay, true
	}
	return r
}

// deregisters reports whether a deploy deregisters the target, so that the
// LB's deregistration delay bounds the in-flight requests it lets finish.
func deregisters(c *fleet.Config) bool {
	return c.Deploy.DrainMode == fleet.DrainModeDeregister || c.Deploy.DrainMode == fleet.DrainModeBoth
}

// hasDeregistrationDelay reports whether the LB kind cuts a deregistered
// target's requests when the deregistration delay ends (ALB semantics: the
// embedded LB and an ALB).
func hasDeregistrationDelay(c *fleet.Config) bool {
	k := c.LoadBalancer.Kind
	return k == fleet.KindEmbedded || k == fleet.KindALB
}

// describeRemoval says in one line how the model takes a draining service out
// of rotation for this fleet.
func describeRemoval(c *fleet.Config) string {
	lb := &c.LoadBalancer
	head := fmt.Sprintf("%s LB, %s targets, drain_mode %s", lb.Kind, lb.TargetType, c.Deploy.DrainMode)
	if pathOf(c) == byHealthCheck {
		s := head + ": the LB takes a draining service out when its health check fails"
		if !healthPropagates(c) {
			s += " (its own nodes check, so no propagation margin)"
		}
		if c.Deploy.DrainMode == fleet.DrainModeBoth {
			s += " (a deploy also deregisters, but any other SIGTERM has only the health check)"
		}
		return s
	}
	s := head + ": the LB stops routing once the deregistration at termination start has propagated"
	switch {
	case lb.TargetType == fleet.TargetTypeInstance:
		s += " (instance targets: the node stays registered, so the deregistration delay does not govern removal)"
	case lb.Kind == fleet.KindALB:
		s += " (ALB ip targets: not before the deregistration delay ends)"
	}
	return s
}

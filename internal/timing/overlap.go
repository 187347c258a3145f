package timing

import (
	"fmt"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// overlapInvariant: the service outlives the LB's routing to it. It must keep
// accepting connections until after the LB has stopped sending new requests,
// plus timing.margin; otherwise requests in between reach nothing (502). The
// route stop comes from removalOf (for ALB ip targets, the end of the
// deregistration delay); marginal when the service closes before the
// conservative bound propagation_max even though it outlives the expected
// route stop.
var overlapInvariant = invariant{
	name: "overlap",
	inputs: []string{
		"drain.serve_period",
		"drain.pre_stop",
		"backend.stop_grace_period",
		"load_balancer.health_check.interval",
		"load_balancer.health_check.unhealthy_threshold",
		"load_balancer.health_check.timeout",
		"load_balancer.propagation_margin",
		"load_balancer.propagation_max",
		"load_balancer.deregistration_delay",
		"timing.margin",
	},
	eval: evalOverlap,
}

func evalOverlap(c *fleet.Config) []clause {
	rm := removalOf(c)
	closed := closeAt(c)
	margin := c.Timing.Margin
	cl := atLeast(closed, rm.at+margin, true, func() string { return overlapText(c, rm, closed) })
	window := rm.at - closed
	cl = cl.because(func() string {
		switch {
		case window == 0:
			return "the listener closes at the very moment the LB stops routing: a request routed just before reaches nothing, and any extra lag is a 502 window"
		case window < 0:
			return fmt.Sprintf("the service outlives the LB's routing by %s, less than timing.margin %s", fmtDur(-window), fmtDur(margin))
		}
		msg := fmt.Sprintf("for up to %s the LB can send new requests to a service that has stopped listening (502s)", fmtDur(window))
		if rm.atIsDeregDelay {
			msg = fmt.Sprintf("an ALB keeps routing to a deregistered ip target until its deregistration_delay %s ends; the listener closes %s before that (502s on every deploy)", fmtDur(rm.at), fmtDur(window))
		}
		if g := c.Backend.StopGracePeriod; rm.at+margin >= g {
			msg += fmt.Sprintf("; a longer serve_period alone cannot fix it: SIGKILL at stop_grace_period %s comes first, so raise that too", fmtDur(g))
		}
		return msg
	})
	return []clause{cl.marginalIf(closed <= rm.worst, func() string {
		if rm.path == byHealthCheck {
			return fmt.Sprintf("with propagation_max %s the LB may route until %s; the listener closes %s before that",
				fmtDur(propagationMax(c)), fmtDur(rm.worst), fmtDur(rm.worst-closed))
		}
		return fmt.Sprintf("the LB has been seen to take up to propagation_max %s to stop routing; the listener closes %s before that",
			fmtDur(rm.worst), fmtDur(rm.worst-closed))
	})}
}

// overlapText writes the overlap relation out. On the health-check path
// pre_stop cancels (both sides start after it), so the relation reads
// serve_period > detect.
func overlapText(c *fleet.Config, rm removal, closed time.Duration) string {
	hc := c.LoadBalancer.HealthCheck
	var b strings.Builder
	p, d, g := c.Drain.PreStop, c.Drain.ServePeriod, c.Backend.StopGracePeriod
	if rm.path == byHealthCheck {
		if p+d > g {
			fmt.Fprintf(&b, "serving %s (stop_grace_period %s − pre_stop %s, SIGKILL before serve_period %s ends)", fmtDur(closed-p), fmtDur(g), fmtDur(p), fmtDur(d))
		} else {
			fmt.Fprintf(&b, "serve_period %s", fmtDur(d))
		}
		fmt.Fprintf(&b, " > detect %s (interval %s × unhealthy_threshold %d + timeout %s",
			fmtDur(rm.at-p), fmtDur(hc.Interval), hc.UnhealthyThreshold, fmtDur(hc.Timeout))
		if pm := c.LoadBalancer.PropagationMargin; pm > 0 && healthPropagates(c) {
			fmt.Fprintf(&b, " + propagation_margin %s", fmtDur(pm))
		}
		b.WriteString(")")
	} else {
		switch {
		case p+d > g:
			fmt.Fprintf(&b, "listener closes at %s (SIGKILL at stop_grace_period, before pre_stop %s + serve_period %s)", fmtDur(closed), fmtDur(p), fmtDur(d))
		case p > 0:
			fmt.Fprintf(&b, "listener closes at pre_stop %s + serve_period %s = %s", fmtDur(p), fmtDur(d), fmtDur(closed))
		default:
			fmt.Fprintf(&b, "listener closes at serve_period %s", fmtDur(closed))
		}
		if rm.atIsDeregDelay {
			fmt.Fprintf(&b, " > LB stops routing when deregistration_delay %s ends (ALB ip target)", fmtDur(rm.at))
		} else {
			fmt.Fprintf(&b, " > LB stops routing at propagation_margin %s after deregistration", fmtDur(rm.at))
		}
	}
	if m := c.Timing.Margin; m > 0 {
		fmt.Fprintf(&b, " + margin %s", fmtDur(m))
	}
	return b.String()
}

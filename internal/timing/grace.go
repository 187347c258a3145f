package timing

import (
	"fmt"
	"strings"

	"github.com/mythex/mythex/internal/fleet"
)

// graceInvariant: nothing in flight is cut. The drain and graceful shutdown
// finish before SIGKILL (pre_stop + D + S + margin ≤ G; Kubernetes counts
// preStop inside terminationGracePeriodSeconds, Docker's stop timeout starts at
// SIGTERM with no preStop). When backend.longest_request is set, a request
// accepted just before the listener closes ends before SIGKILL
// (close + longest_request ≤ G, the relation a platform file shows even when
// the app's own shutdown timeout is unknown), the shutdown waits long enough
// for it (longest_request ≤ S), and an LB that cuts a
// deregistered target's requests when its deregistration delay ends (embedded,
// ALB) gives it long enough too (propagation + longest_request ≤ R).
var graceInvariant = invariant{
	name: "grace",
	inputs: []string{
		"drain.pre_stop",
		"drain.serve_period",
		"drain.shutdown_timeout",
		"backend.stop_grace_period",
		"timing.margin",
		"backend.longest_request",
		"load_balancer.propagation_margin",
		"load_balancer.deregistration_delay",
	},
	eval: evalGrace,
}

func evalGrace(c *fleet.Config) []clause {
	p, d, s := c.Drain.PreStop, c.Drain.ServePeriod, c.Drain.ShutdownTimeout
	g, m := c.Backend.StopGracePeriod, c.Timing.Margin
	need := p + d + s
	out := []clause{atMost(need+m, g, false, func() string {
		var b strings.Builder
		b.WriteString(drainSum(c))
		if m > 0 {
			fmt.Fprintf(&b, " + margin %s", fmtDur(m))
		}
		fmt.Fprintf(&b, " ≤ stop_grace_period %s", fmtDur(g))
		return b.String()
	}).because(func() string {
		if need > g {
			return fmt.Sprintf("SIGKILL at %s comes %s before the drain and shutdown end: requests still in flight are cut", fmtDur(g), fmtDur(need-g))
		}
		return fmt.Sprintf("SIGKILL comes %s after the shutdown ends, less than timing.margin %s", fmtDur(g-need), fmtDur(m))
	})}
	l := c.Backend.LongestRequest
	if l <= 0 {
		return out
	}
	closed := closeAt(c)
	out = append(out, atMost(closed+l, g, false, func() string {
		return fmt.Sprintf("listener closes at %s + longest_request %s = %s ≤ stop_grace_period %s", fmtDur(closed), fmtDur(l), fmtDur(closed+l), fmtDur(g))
	}).because(func() string {
		return fmt.Sprintf("a request accepted just before the listener closes may run %s: SIGKILL at %s cuts it %s early", fmtDur(l), fmtDur(g), fmtDur(closed+l-g))
	}))
	out = append(out, atMost(l, s, false, func() string {
		return fmt.Sprintf("longest_request %s ≤ shutdown_timeout %s", fmtDur(l), fmtDur(s))
	}).because(func() string {
		return fmt.Sprintf("requests still running when the listener closes get %s to finish: ones taking up to %s are cut", fmtDur(s), fmtDur(l))
	}))
	if deregisters(c) && hasDeregistrationDelay(c) {
		pm, r := c.LoadBalancer.PropagationMargin, c.LoadBalancer.DeregistrationDelay
		out = append(out, atMost(pm+l, r, false, func() string {
			if pm > 0 {
				return fmt.Sprintf("propagation_margin %s + longest_request %s = %s ≤ deregistration_delay %s", fmtDur(pm), fmtDur(l), fmtDur(pm+l), fmtDur(r))
			}
			return fmt.Sprintf("longest_request %s ≤ deregistration_delay %s", fmtDur(l), fmtDur(r))
		}).because(func() string {
			return fmt.Sprintf("the LB cuts a deregistered target's requests when the deregistration delay ends: the last request routed there may need %s", fmtDur(pm+l))
		}))
	}
	return out
}

// drainSum writes "pre_stop P + serve_period D + shutdown_timeout S = X",
// leaving pre_stop out when it is 0.
func drainSum(c *fleet.Config) string {
	p, d, s := c.Drain.PreStop, c.Drain.ServePeriod, c.Drain.ShutdownTimeout
	var b strings.Builder
	if p > 0 {
		fmt.Fprintf(&b, "pre_stop %s + ", fmtDur(p))
	}
	fmt.Fprintf(&b, "serve_period %s + shutdown_timeout %s = %s", fmtDur(d), fmtDur(s), fmtDur(p+d+s))
	return b.String()
}

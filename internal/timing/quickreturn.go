package timing

import (
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// quickReturnInvariant: a new version comes back into rotation fast. The LB
// needs healthy_threshold passing checks one interval apart before it routes
// to a new target: H·I ≤ timing.quick_return_max. Exceeding the bound is
// marginal, never a failure: a slow return slows the deploy and drops no
// request (the ALB's own defaults, 5 × 30 s, would otherwise fail every
// target group left at them and hide the findings that do drop requests).
var quickReturnInvariant = invariant{
	name: "quick-return",
	inputs: []string{
		"load_balancer.health_check.healthy_threshold",
		"load_balancer.health_check.interval",
		"timing.quick_return_max",
	},
	eval: evalQuickReturn,
}

func evalQuickReturn(c *fleet.Config) []clause {
	hc := c.LoadBalancer.HealthCheck
	back := time.Duration(hc.HealthyThreshold) * hc.Interval
	q := c.Timing.QuickReturnMax
	cl := atMost(back, q, false, func() string {
		return fmt.Sprintf("healthy_threshold %d × interval %s = %s ≤ quick_return_max %s", hc.HealthyThreshold, fmtDur(hc.Interval), fmtDur(back), fmtDur(q))
	}).because(func() string {
		return fmt.Sprintf("a new version waits %s of passing checks before it gets traffic, %s over the bound; a host stays out of rotation that long on every deploy (marginal: it slows deploys, it drops no request)", fmtDur(back), fmtDur(back-q))
	})
	if cl.level == Fail {
		cl.level = Marginal
	}
	return []clause{cl}
}

package timing

import (
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// ALB target-group and load-balancer ranges (AWS Elastic Load Balancing
// documentation), checked when load_balancer.kind is alb.
const (
	albIntervalMin     = 5 * time.Second
	albIntervalMax     = 300 * time.Second
	albTimeoutMin      = 2 * time.Second
	albTimeoutMax      = 120 * time.Second
	albThresholdMin    = 2
	albThresholdMax    = 10
	albDeregDelayMin   = 0
	albDeregDelayMax   = 3600 * time.Second
	albIdleTimeoutMin  = 1 * time.Second
	albIdleTimeoutMax  = 4000 * time.Second
	albRangeViolations = "outside the ALB's range: the AWS API rejects it, so the fleet cannot be what this file says"
)

// checkTimeoutInvariant: a health check finishes before the next is due
// (T < I, an ALB rule that the embedded LB and HAProxy follow too), and, when
// the LB is an ALB, every target-group number is inside the ALB's range.
// Nothing is checked for kind other: Docker health checks, for example, start
// the next check an interval after the previous one ends.
var checkTimeoutInvariant = invariant{
	name: "check-timeout",
	inputs: []string{
		"load_balancer.health_check.timeout",
		"load_balancer.health_check.interval",
		"load_balancer.health_check.healthy_threshold",
		"load_balancer.health_check.unhealthy_threshold",
		"load_balancer.deregistration_delay",
		"load_balancer.idle_timeout",
	},
	eval: evalCheckTimeout,
}

func evalCheckTimeout(c *fleet.Config) []clause {
	lb := &c.LoadBalancer
	hc := lb.HealthCheck
	if lb.Kind == fleet.KindOther {
		return nil
	}
	out := []clause{atMost(hc.Timeout, hc.Interval, true, func() string {
		return fmt.Sprintf("timeout %s < interval %s", fmtDur(hc.Timeout), fmtDur(hc.Interval))
	}).because(func() string {
		return "a check can still be waiting for its answer when the next one is due; the ALB rejects this"
	})}
	if lb.Kind != fleet.KindALB {
		return out
	}
	out = append(out,
		durRange("interval", hc.Interval, albIntervalMin, albIntervalMax),
		durRange("timeout", hc.Timeout, albTimeoutMin, albTimeoutMax),
		countRange("healthy_threshold", hc.HealthyThreshold, albThresholdMin, albThresholdMax),
		countRange("unhealthy_threshold", hc.UnhealthyThreshold, albThresholdMin, albThresholdMax),
		durRange("deregistration_delay", lb.DeregistrationDelay, albDeregDelayMin, albDeregDelayMax),
		durRange("idle_timeout", lb.IdleTimeout, albIdleTimeoutMin, albIdleTimeoutMax),
	)
	return out
}

// durRange is lo ≤ v ≤ hi. Ranges are validity rules, not margins: they
// carry no slack, so a passing range never hides T < I as the binding
// relation.
func durRange(name string, v, lo, hi time.Duration) clause {
	c := clause{text: func() string {
		return fmt.Sprintf("%s %s within the ALB's %s–%s", name, fmtDur(v), fmtDur(lo), fmtDur(hi))
	}}
	if v < lo || v > hi {
		c.level = Fail
		c.why = func() string { return albRangeViolations }
	}
	return c
}

// countRange is lo ≤ v ≤ hi for a count; it has no duration slack.
func countRange(name string, v, lo, hi int) clause {
	c := clause{text: func() string {
		return fmt.Sprintf("%s %d within the ALB's %d–%d", name, v, lo, hi)
	}}
	if v < lo || v > hi {
		c.level = Fail
		c.why = func() string { return albRangeViolations }
	}
	return c
}

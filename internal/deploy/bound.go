package deploy

import (
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// Bound is the analytic lower bound of one host's deploy: no real deploy of
// this fleet can be faster, so the ratio of the measured time to it says how
// much the tool itself costs.
type Bound struct {
	// Drain is the least time until the LB stops routing: 0 when the target is
	// deregistered through the embedded LB's API (it leaves rotation at once),
	// (U−1)·I when only the health check flips (the first failing check may
	// come right after the flip; U are needed).
	Drain time.Duration `json:"drain_seconds"`
	// Stop is the least time until the old service has exited: it keeps serving
	// for the drain serve period D (+ pre_stop) after SIGTERM, so the drain and
	// stop phases together last at least that.
	Stop time.Duration `json:"stop_seconds"`
	// Start is 0: the bound does not charge the service's own boot.
	Start time.Duration `json:"start_seconds"`
	// Healthy is 0 when the target is registered again (an ALB, and mythex
	// lb, call a newly registered target healthy after one passed check, run
	// at registration), and (H−1)·I when it stayed registered and must come
	// back from unhealthy: H consecutive passing checks, the first right away.
	Healthy time.Duration `json:"healthy_seconds"`
}

// Total is the sum of the phases.
func (b Bound) Total() time.Duration { return b.Drain + b.Stop + b.Start + b.Healthy }

// LowerBound computes the bound for cfg.
func LowerBound(cfg *fleet.Config) Bound {
	hc := cfg.LoadBalancer.HealthCheck
	var b Bound
	serve := cfg.Drain.PreStop + cfg.Drain.ServePeriod
	if cfg.Deploy.DrainMode == fleet.DrainModeHealth {
		b.Drain = time.Duration(hc.UnhealthyThreshold-1) * hc.Interval
		if rest := serve - b.Drain; rest > 0 {
			b.Stop = rest
		}
		b.Healthy = time.Duration(hc.HealthyThreshold-1) * hc.Interval
	} else {
		b.Stop = serve
	}
	return b
}

package timing

import (
	"encoding/json"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// Bound is the analytic lower bound of one host's deploy, phase by phase:
// no real deploy of this fleet can be faster, so the ratio of the measured
// time to it says how much the tool itself costs. It follows the load
// balancers' own timing: an ALB target group's health-check thresholds and
// deregistration, HAProxy's `set server … state drain|ready` and its checks
// of a drained server.
type Bound struct {
	// Drain is the least time until the LB stops routing: 0 when the target is
	// deregistered through the embedded LB's API (it leaves rotation at once),
	// (U−1)·I when only the health check flips (the first failing check may
	// come right after the flip; U are needed).
	Drain time.Duration `json:"-"`
	// Stop is the least time until the old service has exited: it keeps serving
	// for the drain serve period D (+ pre_stop) after SIGTERM, so the drain and
	// stop phases together last at least that.
	Stop time.Duration `json:"-"`
	// Start is 0: the bound does not charge the service's own boot.
	Start time.Duration `json:"-"`
	// Healthy is 0 when the target is registered again (an ALB, and mythex
	// lb, call a newly registered target healthy after one passed check, run
	// at registration), and (H−1)·I when it stayed registered and must come
	// back from unhealthy: H consecutive passing checks, the first right away.
	Healthy time.Duration `json:"-"`
	// Verify is deploy.min_healthy_time: a host counts as verified only
	// after every service stayed up that long (look twice), so no deploy
	// can be faster.
	Verify time.Duration `json:"-"`
}

// MarshalJSON writes the phases in seconds: {"drain_seconds",
// "stop_seconds", "start_seconds", "healthy_seconds", "verify_seconds",
// "total_seconds"}.
func (b Bound) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Drain   float64 `json:"drain_seconds"`
		Stop    float64 `json:"stop_seconds"`
		Start   float64 `json:"start_seconds"`
		Healthy float64 `json:"healthy_seconds"`
		Verify  float64 `json:"verify_seconds"`
		Total   float64 `json:"total_seconds"`
	}{b.Drain.Seconds(), b.Stop.Seconds(), b.Start.Seconds(), b.Healthy.Seconds(), b.Verify.Seconds(), b.Total().Seconds()})
}

// Explain says in words where the bound's phases come from.
func (b Bound) Explain() string {
	if b.Drain > 0 {
		return "health flip: unhealthy after (unhealthy_threshold − 1) × interval at best; the service serves its drain period after SIGTERM; back after (healthy_threshold − 1) × interval; then up for min_healthy_time"
	}
	if b.Healthy > 0 {
		return "drained: out of rotation at once; the service serves its drain period after SIGTERM; the load balancer's checks, still running, saw it DOWN: back after (healthy_threshold − 1) × interval; then up for min_healthy_time"
	}
	return "deregistered: out of rotation at once; the service serves its drain period after SIGTERM; registered again: healthy after one passed check; then up for min_healthy_time"
}

// Total is the sum of the phases.
func (b Bound) Total() time.Duration { return b.Drain + b.Stop + b.Start + b.Healthy + b.Verify }

// LowerBound computes the bound of one host's deploy for cfg: drain mode,
// health-check interval and thresholds, the drain serve period with
// pre_stop, and deploy.min_healthy_time. It never fails: cfg is assumed
// valid (fleet.Config.Validate).
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
		// HAProxy keeps checking a drained server: one whose service stays
		// stopped for (U−1)·I is DOWN, and `state ready` brings it back only
		// after H passing checks.
		if cfg.LoadBalancer.Kind == fleet.KindHAProxy && b.Stop >= time.Duration(hc.UnhealthyThreshold-1)*hc.Interval {
			b.Healthy = time.Duration(hc.HealthyThreshold-1) * hc.Interval
		}
	}
	b.Verify = cfg.Deploy.MinHealthyTime
	return b
}

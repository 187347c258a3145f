package fleetlb

import (
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
)

// Want is the target group settings lbc asks for.
func Want(lbc fleet.LoadBalancer) lbport.Settings {
	hc := lbc.HealthCheck
	return lbport.Settings{
		HealthCheck: lbport.HealthCheck{Path: hc.Path, Interval: hc.Interval, Timeout: hc.Timeout,
			HealthyThreshold: hc.HealthyThreshold, UnhealthyThreshold: hc.UnhealthyThreshold},
		DeregistrationDelay: lbc.DeregistrationDelay,
		Algorithm:           lbc.Algorithm,
	}
}

// Difference is one field where the live target group differs from
// mythex.yml.
type Difference struct {
	// Field is the mythex.yml field, e.g. load_balancer.health_check.interval.
	Field string `json:"field"`
	// File is its value in mythex.yml.
	File string `json:"file"`
	// Live is the load balancer's.
	Live string `json:"live"`
}

// Drift lists the fields where live differs from want, in mythex.yml order.
// Slow start is reported when the live target group has it on (mythex.yml
// has no such field: it must be off for the timing model to hold). An empty
// live algorithm (the load balancer does not tell) is not drift.
func Drift(want, live lbport.Settings) []Difference {
	var out []Difference
	add := func(field string, file, lv any) {
		f, l := fmt.Sprint(file), fmt.Sprint(lv)
		if f != l {
			out = append(out, Difference{Field: field, File: f, Live: l})
		}
	}
	w, l := want.HealthCheck, live.HealthCheck
	add("load_balancer.health_check.path", w.Path, l.Path)
	add("load_balancer.health_check.interval", w.Interval, l.Interval)
	add("load_balancer.health_check.timeout", w.Timeout, l.Timeout)
	add("load_balancer.health_check.healthy_threshold", w.HealthyThreshold, l.HealthyThreshold)
	add("load_balancer.health_check.unhealthy_threshold", w.UnhealthyThreshold, l.UnhealthyThreshold)
	add("load_balancer.deregistration_delay", want.DeregistrationDelay, live.DeregistrationDelay)
	if live.Algorithm != "" {
		add("load_balancer.algorithm", want.Algorithm, live.Algorithm)
	}
	if live.SlowStart != 0 {
		add("(target group) slow_start.duration_seconds", time.Duration(0), live.SlowStart)
	}
	return out
}

// WithLive returns a copy of c with the live target group's numbers in
// place of the file's, for `mythex check --live`.
func WithLive(c fleet.Config, live lbport.Settings) fleet.Config {
	hc := &c.LoadBalancer.HealthCheck
	hc.Path, hc.Interval, hc.Timeout = live.HealthCheck.Path, live.HealthCheck.Interval, live.HealthCheck.Timeout
	hc.HealthyThreshold, hc.UnhealthyThreshold = live.HealthCheck.HealthyThreshold, live.HealthCheck.UnhealthyThreshold
	c.LoadBalancer.DeregistrationDelay = live.DeregistrationDelay
	if live.Algorithm != "" {
		c.LoadBalancer.Algorithm = live.Algorithm
	}
	return c
}

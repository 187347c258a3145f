package timing

import (
	"testing"

	"github.com/mythex/mythex/internal/fleet"
)

func deregisterALB(kind, targetType string) func(c *fleet.Config) {
	return func(c *fleet.Config) {
		c.Deploy.DrainMode = fleet.DrainModeDeregister
		c.LoadBalancer.Kind, c.LoadBalancer.TargetType = kind, targetType
		if kind == fleet.KindALB {
			c.LoadBalancer.PropagationMargin = 15 * sec
		}
		c.LoadBalancer.DeregistrationDelay = 300 * sec
		c.Drain.ServePeriod, c.Drain.PreStop = 0, 20*sec
		c.Backend.StopGracePeriod = 60 * sec
	}
}

func TestOverlap_Eval(t *testing.T) {
	runEvalCases(t, overlapInvariant, []evalCase{
		{name: "seed after holds by 3s", level: Pass, slack: 3 * sec,
			formula: "serve_period 15s > detect 12s (interval 5s × unhealthy_threshold 2 + timeout 2s)"},
		{name: "seed before fails by 57s", edit: func(c *fleet.Config) {
			c.LoadBalancer.HealthCheck.Interval, c.Drain.ServePeriod = 30*sec, 5*sec
			c.Deploy.DrainMode = fleet.DrainModeHealth
		}, level: Fail, slack: -57 * sec, noteMatch: "for up to 57s"},
		{name: "equal is not enough", edit: func(c *fleet.Config) { c.Drain.ServePeriod = 12 * sec },
			level: Fail, slack: 0, noteMatch: "very moment"},
		{name: "propagation margin adds to detection", edit: func(c *fleet.Config) { c.LoadBalancer.PropagationMargin = 2 * sec },
			level: Pass, slack: sec, formula: "+ propagation_margin 2s"},
		{name: "timing margin is required headroom", edit: func(c *fleet.Config) { c.Timing.Margin = 4 * sec },
			level: Fail, slack: -sec, formula: "+ margin 4s", noteMatch: "less than timing.margin 4s"},
		{name: "pre_stop delays both sides of the health path", edit: func(c *fleet.Config) {
			c.Drain.PreStop, c.Backend.StopGracePeriod = 10*sec, 60*sec
		}, level: Pass, slack: 3 * sec},
		{name: "SIGKILL cuts the serve period short", edit: func(c *fleet.Config) { c.Drain.PreStop = 20 * sec },
			level: Fail, slack: -2 * sec, formula: "serving 10s (stop_grace_period 30s − pre_stop 20s", noteMatch: "raise that too"},
		{name: "drain_mode both is judged on the health path", edit: func(c *fleet.Config) {
			c.Deploy.DrainMode = fleet.DrainModeBoth
			c.LoadBalancer.HealthCheck.Interval = 30 * sec
		}, level: Fail, slack: -47 * sec},
		{name: "propagation_max beyond the serve period is marginal", edit: func(c *fleet.Config) { c.LoadBalancer.PropagationMax = 4 * sec },
			level: Marginal, slack: 3 * sec, noteMatch: "with propagation_max 4s the LB may route until 16s; the listener closes 1s before"},
		{name: "instance targets: deregistration delay does not govern", edit: deregisterALB(fleet.KindALB, fleet.TargetTypeInstance),
			level: Pass, slack: 5 * sec, formula: "listener closes at pre_stop 20s + serve_period 0s = 20s > LB stops routing at propagation_margin 15s"},
		// Issue 13: a preStop a few seconds short of the deregistration delay on
		// ip targets was a real incident (errors on every deploy); it was only
		// marginal before.
		{name: "ALB ip targets: closing before the deregistration delay ends fails", edit: deregisterALB(fleet.KindALB, fleet.TargetTypeIP),
			level: Fail, slack: -280 * sec, formula: "when deregistration_delay 300s ends", noteMatch: "the listener closes 280s before that"},
		{name: "ALB ip targets: a few seconds short of the delay fails", edit: func(c *fleet.Config) {
			deregisterALB(fleet.KindALB, fleet.TargetTypeIP)(c)
			c.LoadBalancer.DeregistrationDelay = 25 * sec
		}, level: Fail, slack: -5 * sec, noteMatch: "deregistration_delay 25s"},
		{name: "ALB ip targets closing as the deregistration delay ends fail", edit: func(c *fleet.Config) {
			deregisterALB(fleet.KindALB, fleet.TargetTypeIP)(c)
			c.LoadBalancer.DeregistrationDelay = 20 * sec
		}, level: Fail, slack: 0},
		{name: "ALB ip targets closing after the deregistration delay pass", edit: func(c *fleet.Config) {
			deregisterALB(fleet.KindALB, fleet.TargetTypeIP)(c)
			c.LoadBalancer.DeregistrationDelay = 19 * sec
		}, level: Pass, slack: sec},
		// Issue 13: kind alb added its 15s margin on the health path too.
		{name: "ALB health path: no propagation margin", edit: func(c *fleet.Config) {
			c.LoadBalancer.Kind, c.LoadBalancer.PropagationMargin = fleet.KindALB, 15*sec
		}, level: Pass, slack: 3 * sec},
		{name: "embedded ip targets: deregistration takes effect at once", edit: deregisterALB(fleet.KindEmbedded, fleet.TargetTypeIP),
			level: Pass, slack: 20 * sec},
		{name: "deregistered while the listener closes at once", edit: func(c *fleet.Config) {
			deregisterALB(fleet.KindOther, fleet.TargetTypeIP)(c)
			c.LoadBalancer.PropagationMargin, c.Drain.PreStop = 2*sec, 0
		}, level: Fail, slack: -2 * sec, formula: "listener closes at serve_period 0s", noteMatch: "for up to 2s"},
		{name: "deregistered with SIGKILL before the serve period ends", edit: func(c *fleet.Config) {
			deregisterALB(fleet.KindALB, fleet.TargetTypeInstance)(c)
			c.Backend.StopGracePeriod = 12 * sec
		}, level: Fail, slack: -3 * sec, formula: "listener closes at 12s (SIGKILL at stop_grace_period"},
	})
}

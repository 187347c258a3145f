package timing

import (
	"testing"

	"github.com/mythex/mythex/internal/fleet"
)

func TestQuickReturn_Eval(t *testing.T) {
	runEvalCases(t, quickReturnInvariant, []evalCase{
		{name: "seed after is back in 10s", level: Pass, slack: 20 * sec,
			formula: "healthy_threshold 2 × interval 5s = 10s ≤ quick_return_max 30s"},
		{name: "at the bound holds", edit: func(c *fleet.Config) { c.LoadBalancer.HealthCheck.HealthyThreshold = 6 },
			level: Pass, slack: 0},
		{name: "ALB defaults take 150s", edit: func(c *fleet.Config) {
			c.LoadBalancer.HealthCheck.HealthyThreshold, c.LoadBalancer.HealthCheck.Interval = 5, 30*sec
		}, level: Marginal, slack: -120 * sec, noteMatch: "waits 150s"}, // issue 13: the ALB's defaults are not a failure
		{name: "a looser bound", edit: func(c *fleet.Config) {
			c.LoadBalancer.HealthCheck.Interval, c.Timing.QuickReturnMax = 30*sec, 60*sec
		}, level: Pass, slack: 0},
	})
}

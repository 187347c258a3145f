package timing

import (
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

func alb(edit func(c *fleet.Config)) func(c *fleet.Config) {
	return func(c *fleet.Config) {
		c.LoadBalancer.Kind = fleet.KindALB
		if edit != nil {
			edit(c)
		}
	}
}

func TestCheckTimeout_Eval(t *testing.T) {
	runEvalCases(t, checkTimeoutInvariant, []evalCase{
		{name: "seed after", level: Pass, slack: 3 * sec, formula: "timeout 2s < interval 5s"},
		{name: "timeout equal to interval", edit: func(c *fleet.Config) { c.LoadBalancer.HealthCheck.Timeout = 5 * sec },
			level: Fail, slack: 0, noteMatch: "next one is due"},
		{name: "embedded LB allows sub-ALB numbers", edit: func(c *fleet.Config) {
			c.LoadBalancer.HealthCheck.Interval, c.LoadBalancer.HealthCheck.Timeout = sec/2, sec/5
		}, level: Pass, slack: 300 * time.Millisecond, formula: "timeout 0.2s < interval 0.5s"},
		{name: "kind other: nothing to check", edit: func(c *fleet.Config) {
			c.LoadBalancer.Kind, c.LoadBalancer.HealthCheck.Timeout = fleet.KindOther, 10*sec
		}, level: Pass, noSlack: true, formula: "not checked for load_balancer.kind other"},
		{name: "ALB in range", edit: alb(nil), level: Pass, slack: 3 * sec},
		{name: "ALB interval under 5s", edit: alb(func(c *fleet.Config) { c.LoadBalancer.HealthCheck.Interval = 4 * sec }),
			level: Fail, noSlack: true, formula: "interval 4s within the ALB's 5s–300s", noteMatch: "AWS API rejects it"},
		{name: "ALB timeout under 2s", edit: alb(func(c *fleet.Config) { c.LoadBalancer.HealthCheck.Timeout = sec }),
			level: Fail, noSlack: true, formula: "timeout 1s within the ALB's 2s–120s"},
		{name: "ALB healthy threshold of 1", edit: alb(func(c *fleet.Config) { c.LoadBalancer.HealthCheck.HealthyThreshold = 1 }),
			level: Fail, noSlack: true, formula: "healthy_threshold 1 within the ALB's 2–10"},
		{name: "ALB unhealthy threshold of 11", edit: alb(func(c *fleet.Config) { c.LoadBalancer.HealthCheck.UnhealthyThreshold = 11 }),
			level: Fail, noSlack: true, formula: "unhealthy_threshold 11 within the ALB's 2–10"},
		{name: "ALB deregistration delay over an hour", edit: alb(func(c *fleet.Config) { c.LoadBalancer.DeregistrationDelay = 3601 * sec }),
			level: Fail, noSlack: true, formula: "deregistration_delay 3601s within the ALB's 0s–3600s"},
		{name: "ALB idle timeout over 4000s", edit: alb(func(c *fleet.Config) { c.LoadBalancer.IdleTimeout = 4001 * sec }),
			level: Fail, noSlack: true, formula: "idle_timeout 4001s within the ALB's 1s–4000s"},
		{name: "a duration failure binds before a count failure", edit: alb(func(c *fleet.Config) {
			c.LoadBalancer.HealthCheck.HealthyThreshold, c.LoadBalancer.HealthCheck.Timeout = 1, 6*sec
		}), level: Fail, slack: -sec, formula: "timeout 6s < interval 5s", noteMatch: "also fail: healthy_threshold 1"},
	})
}

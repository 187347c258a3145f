package timing

import (
	"testing"

	"github.com/mythex/mythex/internal/fleet"
)

func TestGrace_Eval(t *testing.T) {
	runEvalCases(t, graceInvariant, []evalCase{
		{name: "seed after fits with 5s to spare", level: Pass, slack: 5 * sec,
			formula: "serve_period 15s + shutdown_timeout 10s = 25s ≤ stop_grace_period 30s"},
		{name: "exactly at the grace period holds", edit: func(c *fleet.Config) { c.Drain.ShutdownTimeout = 15 * sec },
			level: Pass, slack: 0},
		{name: "one second over is cut", edit: func(c *fleet.Config) { c.Drain.ShutdownTimeout = 16 * sec },
			level: Fail, slack: -sec, noteMatch: "SIGKILL at 30s comes 1s before"},
		{name: "Kubernetes counts preStop inside the grace period", edit: func(c *fleet.Config) {
			c.Drain.PreStop, c.Drain.ServePeriod, c.Drain.ShutdownTimeout, c.Backend.StopGracePeriod = 5*sec, 0, 30*sec, 30*sec
		}, level: Fail, slack: -5 * sec, formula: "pre_stop 5s + serve_period 0s + shutdown_timeout 30s = 35s ≤ stop_grace_period 30s"},
		{name: "timing margin is required headroom", edit: func(c *fleet.Config) { c.Timing.Margin = 6 * sec },
			level: Fail, slack: -sec, formula: "+ margin 6s", noteMatch: "less than timing.margin"},
		{name: "longest request beyond the shutdown timeout is cut", edit: func(c *fleet.Config) {
			c.Backend.LongestRequest, c.Drain.ShutdownTimeout = 60*sec, 0
		}, level: Fail, slack: -60 * sec, formula: "longest_request 60s ≤ shutdown_timeout 0s", noteMatch: "ones taking up to 60s are cut"},
		{name: "no longest request: only the grace period is judged", edit: func(c *fleet.Config) {
			c.Backend.LongestRequest, c.Drain.ShutdownTimeout = 0, 0
		}, level: Pass, slack: 15 * sec},
		{name: "deregistration delay shorter than the longest request", edit: func(c *fleet.Config) {
			c.LoadBalancer.DeregistrationDelay = 4 * sec
		}, level: Fail, slack: -sec, formula: "longest_request 5s ≤ deregistration_delay 4s"},
		{name: "propagation counts against the deregistration delay", edit: func(c *fleet.Config) {
			c.LoadBalancer.DeregistrationDelay, c.LoadBalancer.PropagationMargin = 7*sec, 3*sec
		}, level: Fail, slack: -sec, formula: "propagation_margin 3s + longest_request 5s = 8s ≤ deregistration_delay 7s"},
		{name: "no deregistration in drain_mode health", edit: func(c *fleet.Config) {
			c.LoadBalancer.DeregistrationDelay, c.Deploy.DrainMode = 0, fleet.DrainModeHealth
		}, level: Pass, slack: 5 * sec},
		{name: "no deregistration delay on kind other", edit: func(c *fleet.Config) {
			c.LoadBalancer.DeregistrationDelay, c.LoadBalancer.Kind = 0, fleet.KindOther
		}, level: Pass, slack: 5 * sec},
	})
}

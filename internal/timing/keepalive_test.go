package timing

import (
	"testing"

	"github.com/mythex/mythex/internal/fleet"
)

func TestKeepAlive_Eval(t *testing.T) {
	runEvalCases(t, keepAliveInvariant, []evalCase{
		{name: "seed after is 15s apart", level: Pass, slack: 15 * sec,
			formula: "keepalive_idle_timeout 75s > idle_timeout 60s"},
		{name: "10s apart is enough", edit: func(c *fleet.Config) { c.Backend.KeepAliveIdleTimeout = 70 * sec },
			level: Pass, slack: 10 * sec},
		{name: "under 10s apart is marginal", edit: func(c *fleet.Config) { c.Backend.KeepAliveIdleTimeout = 61 * sec },
			level: Marginal, slack: sec, noteMatch: "only 1s apart"},
		{name: "equal races", edit: func(c *fleet.Config) { c.Backend.KeepAliveIdleTimeout = 60 * sec },
			level: Fail, slack: 0, noteMatch: "502"},
		{name: "Node's 5s default behind an ALB", edit: func(c *fleet.Config) { c.Backend.KeepAliveIdleTimeout = 5 * sec },
			level: Fail, slack: -55 * sec},
		{name: "a request as slow as the LB's idle timeout gets a 504", edit: func(c *fleet.Config) {
			c.Backend.LongestRequest, c.Drain.ShutdownTimeout = 60*sec, 60*sec
		}, level: Fail, slack: 0, formula: "longest_request 60s < idle_timeout 60s", noteMatch: "504"},
	})
}

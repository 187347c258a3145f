package timing

import (
	"testing"

	"github.com/mythex/mythex/internal/fleet"
)

func TestDrainBudget_Eval(t *testing.T) {
	runEvalCases(t, drainBudgetInvariant, []evalCase{
		{name: "seed after drains in 25s of 150s", level: Pass, slack: 125 * sec,
			formula: "serve_period 15s + shutdown_timeout 10s = 25s ≤ drain.max 150s"},
		{name: "pre_stop is part of the drain", edit: func(c *fleet.Config) { c.Drain.PreStop, c.Drain.Max = 10*sec, 30*sec },
			level: Fail, slack: -5 * sec, formula: "pre_stop 10s + serve_period 15s", noteMatch: "5s before its drain ends"},
		{name: "exactly the budget holds", edit: func(c *fleet.Config) { c.Drain.Max = 25 * sec },
			level: Pass, slack: 0},
	})
}

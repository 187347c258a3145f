package timing

import (
	"testing"

	"github.com/mythex/mythex/internal/fleet"
)

func TestWatchdog_Eval(t *testing.T) {
	runEvalCases(t, watchdogInvariant, []evalCase{
		{name: "four strikes a minute apart outlast a 150s drain", level: Pass, slack: 30 * sec,
			formula: "(failures_before_heal 4 − 1) × interval 60s = 180s ≥ drain.max 150s"},
		{name: "one strike heals mid-drain", edit: func(c *fleet.Config) { c.Watchdog.FailuresBeforeHeal = 1 },
			level: Fail, slack: -150 * sec, noteMatch: "restarted by the watchdog after 0s"},
		{name: "three strikes are 30s short", edit: func(c *fleet.Config) { c.Watchdog.FailuresBeforeHeal = 3 },
			level: Fail, slack: -30 * sec},
		{name: "exactly the drain budget holds", edit: func(c *fleet.Config) {
			c.Watchdog.FailuresBeforeHeal, c.Watchdog.Interval = 3, 75*sec
		}, level: Pass, slack: 0},
	})
}

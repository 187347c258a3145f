package timing

import (
	"fmt"

	"github.com/mythex/mythex/internal/fleet"
)

// drainBudgetInvariant: a host's whole drain fits the deploy's budget for it:
// pre_stop + D + S ≤ M. Otherwise the deploy gives up on every host before
// its services have finished.
var drainBudgetInvariant = invariant{
	name: "drain-budget",
	inputs: []string{
		"drain.pre_stop",
		"drain.serve_period",
		"drain.shutdown_timeout",
		"drain.max",
	},
	eval: evalDrainBudget,
}

func evalDrainBudget(c *fleet.Config) []clause {
	need := c.Drain.PreStop + c.Drain.ServePeriod + c.Drain.ShutdownTimeout
	m := c.Drain.Max
	return []clause{atMost(need, m, false, func() string {
		return fmt.Sprintf("%s ≤ drain.max %s", drainSum(c), fmtDur(m))
	}).because(func() string {
		return fmt.Sprintf("the deploy stops waiting for the host %s before its drain ends", fmtDur(need-m))
	})}
}

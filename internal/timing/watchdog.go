package timing

import (
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// watchdogInvariant: a draining service never looks dead. The watchdog heals
// after failures_before_heal consecutive failed rounds W apart; the first can
// come just after a drain starts, so the last comes (K−1)·W later, which must
// be at least the longest drain a deploy allows: (K−1)·W ≥ M. This holds even
// if the host lock that keeps watchdog and deploy apart is missing.
var watchdogInvariant = invariant{
	name: "watchdog-patience",
	inputs: []string{
		"watchdog.failures_before_heal",
		"watchdog.interval",
		"drain.max",
	},
	eval: evalWatchdog,
}

// WatchdogPatience is the watchdog-patience relation for a watchdog that
// heals after failuresBeforeHeal consecutive failed checks interval apart:
// patience is (failuresBeforeHeal − 1) × interval, the shortest time from a
// service's first failed check to its heal; ok says patience ≥ drainMax, so
// a service draining for a deploy never looks dead to it. The agent warns at
// start when ok is false; `mythex check` fails the fleet.
func WatchdogPatience(failuresBeforeHeal int, interval, drainMax time.Duration) (patience time.Duration, ok bool) {
	patience = time.Duration(failuresBeforeHeal-1) * interval
	return patience, patience >= drainMax
}

func evalWatchdog(c *fleet.Config) []clause {
	k, w, m := c.Watchdog.FailuresBeforeHeal, c.Watchdog.Interval, c.Drain.Max
	patience, _ := WatchdogPatience(k, w, m)
	return []clause{atLeast(patience, m, false, func() string {
		return fmt.Sprintf("(failures_before_heal %d − 1) × interval %s = %s ≥ drain.max %s", k, fmtDur(w), fmtDur(patience), fmtDur(m))
	}).because(func() string {
		return fmt.Sprintf("a service draining for drain.max %s is restarted by the watchdog after %s of failed checks, mid-drain", fmtDur(m), fmtDur(patience))
	})}
}

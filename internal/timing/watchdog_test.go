package timing

import (
	"testing"
	"time"

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

func TestWatchdogPatience(t *testing.T) {
	cases := []struct {
		name     string
		k        int
		w, m     time.Duration
		patience time.Duration
		ok       bool
	}{
		{"defaults hold", 4, 60 * time.Second, 3 * time.Minute, 3 * time.Minute, true},
		{"equal holds", 3, 10 * time.Second, 20 * time.Second, 20 * time.Second, true},
		{"short by one interval", 3, 10 * time.Second, 30 * time.Second, 20 * time.Second, false},
		{"one strike has no patience", 1, time.Minute, time.Second, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := WatchdogPatience(tc.k, tc.w, tc.m)
			if p != tc.patience || ok != tc.ok {
				t.Errorf("WatchdogPatience(%d, %s, %s) = %s, %v; want %s, %v", tc.k, tc.w, tc.m, p, ok, tc.patience, tc.ok)
			}
		})
	}
}

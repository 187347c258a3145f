package timing

import (
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

const sec = time.Second

// fleetWith returns a valid config with the numbers of examples/seed/after.yml,
// built in code, after applying edit.
func fleetWith(t *testing.T, edit func(c *fleet.Config)) fleet.Config {
	t.Helper()
	c := fleet.Default()
	hc := &c.LoadBalancer.HealthCheck
	hc.Interval, hc.Timeout, hc.HealthyThreshold, hc.UnhealthyThreshold = 5*sec, 2*sec, 2, 2
	c.LoadBalancer.DeregistrationDelay = 30 * sec
	c.Drain.ServePeriod, c.Drain.ShutdownTimeout = 15*sec, 10*sec
	c.Backend.KeepAliveIdleTimeout, c.Backend.StopGracePeriod, c.Backend.LongestRequest = 75*sec, 30*sec, 5*sec
	if edit != nil {
		edit(&c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("test config is invalid: %v", err)
	}
	return c
}

// evalCase is one named table case for a single invariant.
type evalCase struct {
	name      string
	edit      func(c *fleet.Config)
	level     Level
	slack     time.Duration
	noSlack   bool   // the binding relation has no duration slack
	formula   string // a substring the formula must contain
	noteMatch string // a substring some note must contain
}

func runEvalCases(t *testing.T, inv invariant, cases []evalCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fleetWith(t, tc.edit)
			r := evaluate(inv, &c)
			if r.Level != tc.level {
				t.Errorf("level = %v, want %v: %s (%s) %v", r.Level, tc.level, r.Formula, r.SlackPhrase(), r.Notes)
			}
			if tc.noSlack {
				if r.HasSlack {
					t.Errorf("slack = %v, want none", r.Slack)
				}
			} else if !r.HasSlack || r.Slack != tc.slack {
				t.Errorf("slack = %v (has %v), want %v: %s", r.Slack, r.HasSlack, tc.slack, r.Formula)
			}
			if !contains(r.Formula, tc.formula) {
				t.Errorf("formula %q does not contain %q", r.Formula, tc.formula)
			}
			if tc.noteMatch != "" && !anyContains(r.Notes, tc.noteMatch) {
				t.Errorf("notes %q: none contains %q", r.Notes, tc.noteMatch)
			}
			if got := levelOf(inv, &c); got != r.Level {
				t.Errorf("levelOf = %v, evaluate = %v", got, r.Level)
			}
		})
	}
}

func contains(s, sub string) bool {
	return strings.Contains(s, sub)
}

func anyContains(ss []string, sub string) bool {
	for _, x := range ss {
		if contains(x, sub) {
			return true
		}
	}
	return false
}

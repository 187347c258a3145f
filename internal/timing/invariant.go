package timing

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// invariant is one named relation family over a fleet's numbers.
type invariant struct {
	name string
	// inputs are the dotted paths of every numeric field eval may read; break
	// points are searched over these (TestInvariant_Inputs checks the list is
	// complete).
	inputs []string
	// eval returns the invariant's relations for c. It must be pure and cheap:
	// the break-point search calls it thousands of times, so text is built
	// lazily.
	eval func(c *fleet.Config) []clause
}

// invariants is every invariant `mythex check` proves, in the order
// docs/check.md explains them.
var invariants = []invariant{
	overlapInvariant,
	graceInvariant,
	quickReturnInvariant,
	keepAliveInvariant,
	watchdogInvariant,
	checkTimeoutInvariant,
	drainBudgetInvariant,
	capacityInvariant,
}

// clause is one relation of an invariant with its verdict.
type clause struct {
	level    Level
	slack    time.Duration
	hasSlack bool
	// text writes the relation out with the numbers.
	text func() string
	// why says what a fail or marginal verdict means; nil or "" when it passes.
	why func() string
}

// atLeast is the relation lhs ≥ rhs (lhs > rhs when strict); its slack is
// lhs − rhs.
func atLeast(lhs, rhs time.Duration, strict bool, text func() string) clause {
	c := clause{slack: lhs - rhs, hasSlack: true, text: text}
	if c.slack < 0 || (strict && c.slack == 0) {
		c.level = Fail
	}
	return c
}

// atMost is the relation lhs ≤ rhs (lhs < rhs when strict); its slack is
// rhs − lhs.
func atMost(lhs, rhs time.Duration, strict bool, text func() string) clause {
	return atLeast(rhs, lhs, strict, text)
}

// because sets the explanation for a non-passing clause.
func (c clause) because(why func() string) clause {
	c.why = why
	return c
}

// marginalIf downgrades a passing clause to marginal when cond holds.
func (c clause) marginalIf(cond bool, why func() string) clause {
	if c.level == Pass && cond {
		c.level = Marginal
		c.why = why
	}
	return c
}

// evaluate turns an invariant's clauses into a Result (without breaks). The
// binding clause is the worst one; among equals, the one with least slack.
func evaluate(inv invariant, c *fleet.Config) Result {
	cls := inv.eval(c)
	res := Result{Name: inv.name}
	if len(cls) == 0 {
		res.Formula = fmt.Sprintf("not checked for load_balancer.kind %s: no vendor rules apply", c.LoadBalancer.Kind)
		return res
	}
	order := slices.Clone(cls)
	slices.SortStableFunc(order, func(a, b clause) int {
		if a.level != b.level {
			return cmp.Compare(b.level, a.level)
		}
		if a.hasSlack != b.hasSlack {
			if a.hasSlack {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.slack, b.slack)
	})
	bind := order[0]
	res.Level = bind.level
	res.Formula = bind.text()
	res.Slack, res.HasSlack = bind.slack, bind.hasSlack
	if bind.level != Pass && bind.why != nil {
		res.Notes = append(res.Notes, bind.why())
	}
	for _, o := range order[1:] {
		if o.level == Pass {
			continue
		}
		n := fmt.Sprintf("also %s: %s", o.level, o.text())
		if o.hasSlack {
			n += " (" + slackPhrase(o.level, o.slack) + ")"
		}
		if o.why != nil {
			n += " — " + o.why()
		}
		res.Notes = append(res.Notes, n)
	}
	return res
}

// levelOf is the worst level of an invariant's clauses; the break search uses
// it without building any text.
func levelOf(inv invariant, c *fleet.Config) Level {
	l := Pass
	for _, cl := range inv.eval(c) {
		l = max(l, cl.level)
	}
	return l
}

// slackPhrase says a slack in words: "slack 3s" or "short by 57s".
func slackPhrase(l Level, s time.Duration) string {
	if l == Fail {
		if s == 0 {
			return "short by 0s: equal is not enough"
		}
		return "short by " + fmtDur(-s)
	}
	if s < 0 {
		return "over by " + fmtDur(-s) // a marginal relation that does not hold
	}
	return "slack " + fmtDur(s)
}

// SlackPhrase says a result's slack in words: "slack 3s", "short by 57s", or
// "" when the binding relation has no duration slack.
func (r Result) SlackPhrase() string {
	if !r.HasSlack {
		return ""
	}
	return slackPhrase(r.Level, r.Slack)
}

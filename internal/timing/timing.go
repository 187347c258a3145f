// Package timing is the timing doctor behind `mythex check`. It evaluates the
// relations between the numbers of a fleet — health checks, drain, stop grace
// period, keep-alive, watchdog, deploy budget — that decide whether a deploy or
// any other stop can drop requests. For each relation it gives a verdict, the
// relation written out with the fleet's numbers, the slack (how far it is from
// breaking) and, for each number it reads, the value at which it breaks.
//
// Everything here is a pure function of a fleet.Config; docs/check.md explains
// the model.
package timing

import (
	"slices"
	"strconv"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// Level is the verdict on one invariant, ordered from best to worst.
type Level int

const (
	// Pass: the relation holds with room to spare.
	Pass Level = iota
	// Marginal: the relation holds by the model's expected numbers but not by
	// a conservative bound (uncertain LB propagation, a keep-alive margin under
	// 10 s). It is printed but does not fail `mythex check`.
	Marginal
	// Fail: the relation is violated; `mythex check` exits 1.
	Fail
)

// String returns "pass", "marginal" or "fail".
func (l Level) String() string {
	switch l {
	case Pass:
		return "pass"
	case Marginal:
		return "marginal"
	case Fail:
		return "fail"
	}
	return "unknown"
}

// Op is a comparison in a break point: the invariant fails when the field's
// value compares to Break.Value this way.
type Op string

// The four comparisons a break point can use.
const (
	OpLess      Op = "<"
	OpLessEq    Op = "<="
	OpGreater   Op = ">"
	OpGreaterEq Op = ">="
)

// Symbol returns the operator as printed for people (≤, ≥, <, >).
func (o Op) Symbol() string {
	switch o {
	case OpLessEq:
		return "≤"
	case OpGreaterEq:
		return "≥"
	}
	return string(o)
}

// Negate returns the comparison that holds exactly when o does not.
func (o Op) Negate() Op {
	switch o {
	case OpLess:
		return OpGreaterEq
	case OpLessEq:
		return OpGreater
	case OpGreater:
		return OpLessEq
	}
	return OpLess
}

// Break is one edge of the values of one input at which an invariant fails,
// every other number of the fleet unchanged: the invariant fails when Field Op
// Value. An input can have a break on each side.
type Break struct {
	// Field is the dotted path of the input in mythex.yml, e.g.
	// load_balancer.health_check.interval.
	Field string
	// Op says on which side of Value the invariant fails; Value itself is on
	// the failing side for <= and >=.
	Op Op
	// Value is the edge as written in mythex.yml: a duration like "6.5s" or a
	// whole number like "3".
	Value string
	// AlsoBreaks, for an invariant that fails, names the other invariants
	// that hold now but fail at the nearest value of Field where this one
	// holds (every other number unchanged): a one-number fix that would trade
	// one failure for another. Empty when the fix is clean, and for an
	// invariant that holds.
	AlsoBreaks []string
}

// Holding returns the condition under which the field no longer breaks the
// invariant: the negation of b, written with whole numbers for a count
// ("≥ 3" becomes "≤ 2", not "< 3").
func (b Break) Holding() Break {
	h := Break{Field: b.Field, Op: b.Op.Negate(), Value: b.Value, AlsoBreaks: b.AlsoBreaks}
	n, err := strconv.ParseInt(b.Value, 10, 64)
	if err != nil {
		return h // a duration: it carries a unit
	}
	switch b.Op {
	case OpGreaterEq:
		h.Op, h.Value = OpLessEq, strconv.FormatInt(n-1, 10)
	case OpLessEq:
		h.Op, h.Value = OpGreaterEq, strconv.FormatInt(n+1, 10)
	}
	return h
}

// Result is the verdict on one invariant.
type Result struct {
	// Name is the invariant's name: overlap, grace, quick-return, keep-alive,
	// watchdog-patience, check-timeout or drain-budget.
	Name string
	// Level is the worst level among the invariant's relations.
	Level Level
	// Formula is the binding relation written out with the fleet's numbers,
	// e.g. "serve_period 15s > detect 12s (interval 5s × unhealthy_threshold 2 + timeout 2s)".
	Formula string
	// Slack is how far the binding relation is from breaking: positive when it
	// holds, the shortfall (negative) when it fails. Meaningful only when
	// HasSlack; a relation between counts (an ALB threshold range) has none.
	Slack time.Duration
	// HasSlack says whether Slack is meaningful.
	HasSlack bool
	// Notes say in words what a fail or marginal verdict means and list any
	// other relation of the invariant that does not pass.
	Notes []string
	// Breaks are the values of each input at which the invariant fails, in
	// input order. For a failing invariant they describe the region it is in;
	// their negation is what makes it hold.
	Breaks []Break
}

// OK reports whether the invariant does not fail (pass or marginal).
func (r Result) OK() bool { return r.Level != Fail }

// Report is the verdict on a whole fleet.
type Report struct {
	// Level is the worst level of any invariant.
	Level Level
	// Model says in one line how the LB learns that a service is draining,
	// which decides the overlap invariant (health checks or deregistration).
	Model string
	// Results holds one Result per invariant, in the order of docs/check.md.
	Results []Result
}

// OK reports whether no invariant fails; marginal ones do not count.
func (r Report) OK() bool { return r.Level != Fail }

// Failed returns the names of the invariants that fail.
func (r Report) Failed() []string { return r.named(Fail) }

// MarginalNames returns the names of the invariants that are marginal.
func (r Report) MarginalNames() []string { return r.named(Marginal) }

func (r Report) named(l Level) []string {
	var out []string
	for _, res := range r.Results {
		if res.Level == l {
			out = append(out, res.Name)
		}
	}
	return out
}

// Check evaluates every invariant over c and finds each input's break points.
// c should be valid (fleet.Load returns only valid configs; a Config built in
// code should pass c.Validate); Check itself never fails and never modifies c.
func Check(c fleet.Config) Report {
	rep := Report{Model: describeRemoval(&c)}
	for _, inv := range invariants {
		res := evaluate(inv, &c)
		res.Breaks = findBreaks(c, inv)
		rep.Results = append(rep.Results, res)
		rep.Level = max(rep.Level, res.Level)
	}
	return rep
}

// Evaluate is Check without the break-point search: the verdict on each
// invariant only. It is cheap enough to call in a loop.
func Evaluate(c fleet.Config) Report {
	rep := Report{Model: describeRemoval(&c)}
	for _, inv := range invariants {
		res := evaluate(inv, &c)
		rep.Results = append(rep.Results, res)
		rep.Level = max(rep.Level, res.Level)
	}
	return rep
}

// CheckInvariant is Check for one invariant by name: its verdict and the
// break points of the given fields only (every input when fields is nil),
// without the cost of the others' search. A field whose extreme values leave
// the invariant's verdict and slack unchanged is skipped without a search:
// its relations do not read it on this fleet's path (the health check when
// removal is by deregistration). ok is false for an unknown name.
func CheckInvariant(c fleet.Config, name string, fields []string) (r Result, ok bool) {
	for _, inv := range invariants {
		if inv.name != name {
			continue
		}
		r = evaluate(inv, &c)
		if fields == nil {
			r.Breaks = findBreaks(c, inv)
			return r, true
		}
		for _, path := range inv.inputs {
			f, found := lookupField(path)
			if !found || !slices.Contains(fields, path) || !reads(c, inv, f) {
				continue
			}
			r.Breaks = append(r.Breaks, fieldBreaks(c, inv, f)...)
		}
		return r, true
	}
	return Result{}, false
}

// reads reports whether inv's verdict or slack differs at the field's lowest
// valid value, its current value or the search bound.
func reads(c fleet.Config, inv invariant, f numField) bool {
	at := func(v int64) (Level, time.Duration) {
		cc := c
		f.set(&cc, v)
		l, s := Pass, time.Duration(0)
		for i, cl := range inv.eval(&cc) {
			if i == 0 || cl.level > l || (cl.level == l && cl.slack < s) {
				l, s = max(l, cl.level), cl.slack
			}
		}
		return l, s
	}
	hi := int64(countSearchMax)
	if f.duration {
		hi = int64(durationSearchMax)
	}
	l0, s0 := at(lowestValid(c, f))
	l1, s1 := at(f.get(&c))
	l2, s2 := at(hi)
	return l0 != l1 || l1 != l2 || s0 != s1 || s1 != s2
}

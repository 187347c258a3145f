package timing

import (
	"math"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// Search bounds for break points: values beyond these are not reported.
const (
	durationSearchMax = 1000 * time.Hour
	countSearchMax    = 1000
)

// findBreaks finds, for each input of inv, the values at which inv fails with
// every other number of c unchanged.
//
// Each relation is monotone in each number, so the values of one input at
// which an invariant does not fail form one interval; its edges are found by
// bisection on whole nanoseconds (or whole counts), so they are exact: with
// detect = 2·I + 2s and D = 15s the interval edge is 6.5s, not about 6.5s.
func findBreaks(c fleet.Config, inv invariant) []Break {
	var out []Break
	for _, path := range inv.inputs {
		f, ok := lookupField(path)
		if !ok {
			continue // TestInvariant_InputsExist keeps this unreachable
		}
		out = append(out, fieldBreaks(c, inv, f)...)
	}
	return out
}

func fieldBreaks(c fleet.Config, inv invariant, f numField) []Break {
	fails := func(v int64) bool {
		cc := c
		f.set(&cc, v)
		return levelOf(inv, &cc) == Fail
	}
	cur := f.get(&c)
	lo, hi := lowestValid(c, f), int64(countSearchMax)
	if f.duration {
		hi = int64(durationSearchMax)
	}
	lo, hi = min(lo, cur), max(hi, cur)
	ok := cur
	if fails(cur) {
		p, found := findHolding(f, lo, hi, fails)
		if !found {
			return nil // no value of this input alone makes it hold
		}
		ok = p
	}
	failing := ok != cur
	var out []Break
	if lo < ok && fails(lo) {
		l, r := bisect(lo, ok, fails) // fails(l), !fails(r), r = l+1
		b := lowerBreak(f, l, r)
		if failing {
			b.AlsoBreaks = newlyFailing(c, inv, f, r)
		}
		out = append(out, b)
	}
	if hi > ok && fails(hi) {
		l, r := bisect(ok, hi, func(v int64) bool { return !fails(v) }) // !fails(l), fails(r)
		b := upperBreak(f, l, r)
		if failing {
			b.AlsoBreaks = newlyFailing(c, inv, f, l)
		}
		out = append(out, b)
	}
	return out
}

// newlyFailing names the invariants other than inv that hold in c but fail
// with f set to v.
func newlyFailing(c fleet.Config, inv invariant, f numField, v int64) []string {
	cc := c
	f.set(&cc, v)
	var out []string
	for _, other := range invariants {
		if other.name == inv.name {
			continue
		}
		if levelOf(other, &cc) == Fail && levelOf(other, &c) != Fail {
			out = append(out, other.name)
		}
	}
	return out
}

// bisect narrows [l, r] with pred(l) true and pred(r) false to adjacent
// values.
func bisect(l, r int64, pred func(int64) bool) (int64, int64) {
	for r-l > 1 {
		m := l + (r-l)/2
		if pred(m) {
			l = m
		} else {
			r = m
		}
	}
	return l, r
}

// zeroMeansUnset lists the fields for which 0 means "not given" rather than a
// length of time: a break point at 0 would tell the reader nothing.
var zeroMeansUnset = map[string]bool{
	"backend.longest_request":       true,
	"load_balancer.propagation_max": true,
}

// lowestValid is 0, or 1 (1ns or a count of 1) when the fleet's validation
// rejects 0 for this field (intervals, timeouts, thresholds) or 0 means unset.
func lowestValid(c fleet.Config, f numField) int64 {
	if zeroMeansUnset[f.path] {
		return 1
	}
	f.set(&c, 0)
	if c.Validate() != nil {
		return 1
	}
	return 0
}

// findHolding looks for a value of f in [lo, hi] at which the invariant does
// not fail: every count up to 200, whole seconds up to 10 minutes, then a
// geometric grid 10% apart, then the two ends.
func findHolding(f numField, lo, hi int64, fails func(int64) bool) (int64, bool) {
	try := func(v int64) bool { return v >= lo && v <= hi && !fails(v) }
	if !f.duration {
		for v := lo; v <= min(hi, 200); v++ {
			if try(v) {
				return v, true
			}
		}
	} else {
		for s := int64(0); s <= 600; s++ {
			if v := s * int64(time.Second); try(v) {
				return v, true
			}
		}
	}
	start := 200.0
	if f.duration {
		start = float64(time.Millisecond)
	}
	for x := start; x <= float64(hi); x *= 1.1 {
		if v := int64(x); try(v) {
			return v, true
		}
	}
	for _, v := range []int64{lo, hi} {
		if try(v) {
			return v, true
		}
	}
	return 0, false
}

// lowerBreak describes "fails at or below lastFail": as ≤ lastFail, or as
// < firstPass when that is the rounder number (6.5s rather than 6.499999999s).
func lowerBreak(f numField, lastFail, firstPass int64) Break {
	if f.duration && roundness(firstPass) > roundness(lastFail) {
		return Break{Field: f.path, Op: OpLess, Value: f.format(firstPass)}
	}
	return Break{Field: f.path, Op: OpLessEq, Value: f.format(lastFail)}
}

// upperBreak describes "fails at or above firstFail": as ≥ firstFail, or as
// > lastPass when that is the rounder number.
func upperBreak(f numField, lastPass, firstFail int64) Break {
	if f.duration && roundness(lastPass) > roundness(firstFail) {
		return Break{Field: f.path, Op: OpGreater, Value: f.format(lastPass)}
	}
	return Break{Field: f.path, Op: OpGreaterEq, Value: f.format(firstFail)}
}

// roundness counts the trailing decimal zeros of v.
func roundness(v int64) int {
	if v == 0 {
		return math.MaxInt
	}
	n := 0
	for v%10 == 0 {
		v /= 10
		n++
	}
	return n
}

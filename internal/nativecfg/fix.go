package nativecfg

import (
	"slices"
	"strconv"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/timing"
)

// maxFixSteps bounds how many keys one fix may change: the first key, then
// the keys the first change pushes over their own limit (a longer preStop
// needs a longer grace period).
const maxFixSteps = 3

// candidate is one way to make a relation hold.
type candidate struct {
	changes []Change
	// clean says no judged relation that held before fails after it.
	clean bool
	// pref is the primary key's place in Bindings: readers list the key a
	// person would change first.
	pref int
}

// fix finds the smallest change of bound native keys that makes r hold: for
// each key whose break point r reports, set it to the nearest value where r
// holds, then follow whatever that change makes fail. Clean fixes come first,
// then the readers' preference (the key a person changes first: a preStop
// sleep before a load balancer's deregistration delay), then fewest keys.
func (s *Subject) fix(r timing.Result) []Change {
	before := s.failing(&s.Config)
	var cands []candidate
	for _, br := range r.Breaks {
		c, ok := s.tryFrom(r.Name, br, before)
		if ok {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		switch {
		case a.clean != b.clean:
			if a.clean {
				return -1
			}
			return 1
		case a.pref != b.pref:
			return a.pref - b.pref
		}
		return len(a.changes) - len(b.changes)
	})
	return cands[0].changes
}

// tryFrom applies br's holding value and then, up to maxFixSteps keys in
// all, fixes whatever still fails that did not before (or r itself).
func (s *Subject) tryFrom(name string, br timing.Break, before map[string]bool) (candidate, bool) {
	c := s.Config
	var out candidate
	used := map[string]bool{}
	ch, bi, ok := s.apply(&c, br.Holding())
	if !ok {
		return out, false
	}
	out.pref, out.changes, used[br.Field] = bi, []Change{ch}, true
	for len(out.changes) < maxFixSteps {
		rep := timing.Evaluate(c)
		var next *timing.Result
		for _, res := range rep.Results {
			if res.Level == timing.Fail && s.Unjudged[res.Name] == "" && (res.Name == name || !before[res.Name]) {
				full, _ := timing.CheckInvariant(c, res.Name, s.fixable())
				next = &full
				break
			}
		}
		if next == nil {
			out.clean = true
			return out, true
		}
		progressed := false
		for _, b := range next.Breaks {
			if used[b.Field] {
				continue
			}
			if ch, _, ok := s.apply(&c, b.Holding()); ok {
				out.changes, used[b.Field], progressed = append(out.changes, ch), true, true
				break
			}
		}
		if !progressed {
			return out, false
		}
	}
	rep := timing.Evaluate(c)
	for _, res := range rep.Results {
		if res.Level == timing.Fail && s.Unjudged[res.Name] == "" && (res.Name == name || !before[res.Name]) {
			return out, false
		}
	}
	out.clean = true
	return out, true
}

// failing names the judged relations that fail in c.
func (s *Subject) failing(c *fleet.Config) map[string]bool {
	out := map[string]bool{}
	for _, r := range timing.Evaluate(*c).Results {
		if r.Level == timing.Fail && s.Unjudged[r.Name] == "" {
			out[r.Name] = true
		}
	}
	return out
}

// apply sets the bound key of h.Field to the nearest native value that meets
// h, in c; it returns the change and the binding's index.
func (s *Subject) apply(c *fleet.Config, h timing.Break) (Change, int, bool) {
	bi := slices.IndexFunc(s.Bindings, func(b Binding) bool { return b.Field == h.Field && !b.Derived })
	if bi < 0 {
		return Change{}, 0, false
	}
	b := &s.Bindings[bi]
	_, isDur, ok := timing.FieldValue(c, h.Field)
	if !ok {
		return Change{}, 0, false
	}
	var edge int64
	if isDur {
		d, err := time.ParseDuration(h.Value)
		if err != nil {
			return Change{}, 0, false
		}
		edge = int64(d - b.Offset)
	} else {
		n, err := strconv.ParseInt(h.Value, 10, 64)
		if err != nil {
			return Change{}, 0, false
		}
		edge = n
	}
	step := b.Unit.step(isDur)
	up := h.Op == timing.OpGreater || h.Op == timing.OpGreaterEq
	n := edge / step // native units, truncated toward zero
	switch h.Op {
	case timing.OpGreater:
		if edge >= 0 {
			n++
		}
	case timing.OpGreaterEq:
		if edge > 0 && edge%step != 0 {
			n++
		}
	case timing.OpLess:
		if edge%step == 0 {
			n--
		}
	}
	if n < 0 {
		return Change{}, 0, false
	}
	model := n * step
	if isDur {
		model += int64(b.Offset)
	}
	timing.SetFieldValue(c, h.Field, model)
	return Change{Loc: b.Loc, AtLeast: up, To: b.Unit.format(n)}, bi, true
}

// step is one native unit in the model's terms (nanoseconds or a count).
func (u Unit) step(isDur bool) int64 {
	if !isDur {
		return 1
	}
	if u == Millis {
		return int64(time.Millisecond)
	}
	return int64(time.Second)
}

// format writes n native units as the key writes them.
func (u Unit) format(n int64) string {
	if u == GoDuration {
		return strconv.FormatInt(n, 10) + "s"
	}
	return strconv.FormatInt(n, 10)
}

// current writes the key's value now, as the file writes it.
func (s *Subject) current(b *Binding) string {
	v, isDur, ok := timing.FieldValue(&s.Config, b.Field)
	if !ok {
		return ""
	}
	if !isDur {
		return strconv.FormatInt(v, 10)
	}
	d := time.Duration(v) - b.Offset
	switch b.Unit {
	case Millis:
		return strconv.FormatInt(d.Milliseconds(), 10)
	case GoDuration:
		return formatGoDuration(d)
	}
	if d%time.Second != 0 {
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	}
	return strconv.FormatInt(int64(d/time.Second), 10)
}

// formatGoDuration writes d in whole seconds when it is ("30s"), else as Go does.
func formatGoDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

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
		cands = s.pairs(r.Name, before)
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

// pairs looks for two-key fixes when no key alone makes the relation hold —
// a longer serve period needs a longer grace period before it counts. For
// each pair, the second key is first moved to whichever end of its range
// gives the relation most slack; the first key's holding value under that is
// where the fix starts, and tryFrom then finds the least the second key
// needs.
func (s *Subject) pairs(name string, before map[string]bool) []candidate {
	fields := s.fixable()
	var out []candidate
	for _, f1 := range fields {
		for _, f2 := range fields {
			if f1 == f2 {
				continue
			}
			lifted, ok := s.lift(name, f2)
			if !ok {
				continue
			}
			res, _ := timing.CheckInvariant(lifted, name, []string{f1})
			if res.Level != timing.Fail {
				continue
			}
			for _, br := range res.Breaks {
				if c, ok := s.tryFrom(name, br, before); ok {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// lift returns the config with field at the end of its range (0, or a
// thousand hours or counts) where the relation has most slack, if that end
// is valid and no worse than now.
func (s *Subject) lift(name, field string) (fleet.Config, bool) {
	slackOf := func(c *fleet.Config) (time.Duration, bool) {
		for _, r := range timing.Evaluate(*c).Results {
			if r.Name == name {
				return r.Slack, r.HasSlack
			}
		}
		return 0, false
	}
	cur, ok := slackOf(&s.Config)
	if !ok {
		return fleet.Config{}, false
	}
	_, isDur, _ := timing.FieldValue(&s.Config, field)
	hi := int64(1000)
	if isDur {
		hi = int64(1000 * time.Hour)
	}
	// Ties go to the later end: lifting a cap (a grace period) changes
	// nothing until the other key moves too.
	best, found := s.Config, false
	for _, v := range []int64{0, 1, hi} {
		c := s.Config
		timing.SetFieldValue(&c, field, v)
		if c.Validate() != nil {
			continue
		}
		if sl, ok := slackOf(&c); ok && sl >= cur {
			best, cur, found = c, sl, true
		}
	}
	return best, found
}

// tryFrom applies br's holding value and then, up to maxFixSteps keys in
// all, fixes whatever still fails that did not before (or r itself).
func (s *Subject) tryFrom(name string, br timing.Break, before map[string]bool) (candidate, bool) {
	c := s.Config
	var out candidate
	at := map[string]int{} // field → its index in out.changes
	ch, bi, ok := s.apply(&c, br.Holding())
	if !ok {
		return out, false
	}
	out.pref, out.changes, at[br.Field] = bi, []Change{ch}, 0
	// Each round fixes what still fails; a key already changed may move
	// further the same way (a grace period raised for overlap, then for
	// grace), a new key is added while fewer than maxFixSteps are changed.
	for range 2 * maxFixSteps {
		var next *timing.Result
		for _, res := range timing.Evaluate(c).Results {
			if res.Level == timing.Fail && !s.unjudged(res.Name) && (res.Name == name || !before[res.Name]) {
				full, _ := timing.CheckInvariant(c, res.Name, s.fixable())
				next = &full
				break
			}
		}
		if next == nil {
			out.clean = true
			return out, true
		}
		if !s.advance(&c, &out, at, next.Breaks) {
			return out, false
		}
	}
	return out, false
}

// advance applies the first break that is a new key (while room is left) or
// moves a changed key further the same way; it reports whether it did.
func (s *Subject) advance(c *fleet.Config, out *candidate, at map[string]int, breaks []timing.Break) bool {
	// Keys already changed first, then in the readers' preference.
	order := slices.Clone(breaks)
	rank := func(b timing.Break) int {
		if _, used := at[b.Field]; used {
			return -1
		}
		return slices.IndexFunc(s.Bindings, func(x Binding) bool { return x.Field == b.Field })
	}
	slices.SortStableFunc(order, func(a, b timing.Break) int { return rank(a) - rank(b) })
	for _, b := range order {
		h := b.Holding()
		i, used := at[b.Field]
		if !used && len(out.changes) >= maxFixSteps {
			continue
		}
		up := h.Op == timing.OpGreater || h.Op == timing.OpGreaterEq
		if used && out.changes[i].AtLeast != up {
			continue
		}
		ch, _, ok := s.apply(c, h)
		if !ok || (used && ch.To == out.changes[i].To) {
			continue // not a value the key takes, or no move at all
		}
		if used {
			out.changes[i] = ch
		} else {
			at[b.Field] = len(out.changes)
			out.changes = append(out.changes, ch)
		}
		return true
	}
	return false
}

// failing names the judged relations that fail in c.
func (s *Subject) failing(c *fleet.Config) map[string]bool {
	out := map[string]bool{}
	for _, r := range timing.Evaluate(*c).Results {
		if r.Level == timing.Fail && !s.unjudged(r.Name) {
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
	prev, _, _ := timing.FieldValue(c, h.Field)
	timing.SetFieldValue(c, h.Field, model)
	if c.Validate() != nil {
		// Not a value the platform accepts (a zero timeout): no fix here.
		timing.SetFieldValue(c, h.Field, prev)
		return Change{}, 0, false
	}
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

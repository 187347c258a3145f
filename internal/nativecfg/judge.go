package nativecfg

import (
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/mythex/mythex/internal/timing"
)

// Finding is one relation that does not hold, in the platform's own terms.
type Finding struct {
	// Invariant is the timing relation's name (overlap, grace, ...).
	Invariant string `json:"invariant"`
	// Level is fail or marginal.
	Level timing.Level `json:"-"`
	// Loc is the key the fix changes, or the unit's file when no single key
	// does.
	Loc Loc `json:"location"`
	// Current is the key's value as the file writes it ("25"), or the
	// assumed default.
	Current string `json:"current,omitempty"`
	// Assumed says Current is a platform default, not in the file.
	Assumed bool `json:"assumed,omitempty"`
	// Relation is the model's relation written out with the numbers.
	Relation string `json:"relation"`
	// Why says what happens to requests.
	Why string `json:"why"`
	// Fix is the smallest change, in native keys, that makes the relation
	// hold without breaking another; empty when no change of the bound keys
	// alone does.
	Fix []Change `json:"fix,omitempty"`
}

// Change is one key set to a new value.
type Change struct {
	Loc Loc `json:"location"`
	// AtLeast is true for "at least To", false for "at most To".
	AtLeast bool   `json:"at_least"`
	To      string `json:"to"`
	// From is the key's value now, when the change was stated by a reader
	// rather than found (empty otherwise: the finding's Current says it).
	From string `json:"-"`
}

// Verdict is the judgement of one Subject.
type Verdict struct {
	Subject *Subject
	// Level is the worst level of the judged relations.
	Level timing.Level
	// Results are the judged relations, timing's then the extra ones.
	Results []timing.Result
	// Unjudged are the relations left out, by name, with why.
	Unjudged map[string]string
	// Findings has one entry per failing or marginal relation, failing first.
	Findings []Finding
}

// Judge evaluates s. Only relations that do not pass cost more than one
// evaluation: their break points are searched to find the fix.
func Judge(s *Subject) Verdict {
	v := Verdict{Subject: s, Unjudged: s.Unjudged}
	if s.idleOnly() {
		v.Unjudged = maps.Clone(s.Unjudged)
		delete(v.Unjudged, "keep-alive")
	}
	rep := timing.Evaluate(s.Config)
	for _, r := range rep.Results {
		if s.unjudged(r.Name) {
			continue
		}
		if r.Level == timing.Fail {
			// Only a failing relation needs its break points (for the fix).
			r, _ = timing.CheckInvariant(s.Config, r.Name, s.fixable())
		}
		v.Results = append(v.Results, r)
	}
	v.Results = append(v.Results, s.Extra...)
	for _, r := range v.Results {
		v.Level = max(v.Level, r.Level)
		if r.Level == timing.Pass {
			continue
		}
		v.Findings = append(v.Findings, s.finding(r))
	}
	slices.SortStableFunc(v.Findings, func(a, b Finding) int { return int(b.Level) - int(a.Level) })
	return v
}

// finding describes r in native terms.
func (s *Subject) finding(r timing.Result) Finding {
	f := Finding{Invariant: r.Name, Level: r.Level, Relation: r.Formula, Loc: Loc{File: s.File, Path: s.Name}}
	if len(r.Notes) > 0 {
		f.Why = r.Notes[0]
	}
	if r.Level == timing.Fail {
		if fx, ok := s.ExtraFix[r.Name]; ok {
			f.Fix = append([]Change(nil), fx...)
		} else {
			f.Fix = s.fix(r)
		}
	}
	// The finding sits on the key its fix changes first, or on the first
	// bound key the relation reads.
	var at *Binding
	if len(f.Fix) > 0 {
		at = s.bindingAt(f.Fix[0].Loc)
	} else {
		for _, br := range r.Breaks {
			if b := s.binding(br.Field); b != nil {
				at = b
				break
			}
		}
	}
	if at != nil {
		f.Loc, f.Current, f.Assumed = at.Loc, s.current(at), at.Assumed
	} else if len(f.Fix) > 0 {
		f.Loc, f.Current = f.Fix[0].Loc, f.Fix[0].From
	}
	f.Loc = f.Loc.resolved()
	for i := range f.Fix {
		f.Fix[i].Loc = f.Fix[i].Loc.resolved()
	}
	return f
}

func (s *Subject) bindingAt(l Loc) *Binding {
	for i := range s.Bindings {
		if s.Bindings[i].Loc == l {
			return &s.Bindings[i]
		}
	}
	return nil
}

// fixable lists the model fields a fix may change: bound, not derived.
func (s *Subject) fixable() []string {
	var out []string
	for _, b := range s.Bindings {
		if !b.Derived {
			out = append(out, b.Field)
		}
	}
	return out
}

// JudgeAll judges every subject, spread over the machine's cores (each Judge
// is pure and independent); the verdicts keep the subjects' order.
func JudgeAll(subs []*Subject) []Verdict {
	out := make([]Verdict, len(subs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(subs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = Judge(subs[i])
			}
		}()
	}
	for i := range subs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// idleOnly: the app's keep-alive is unknown (modelled as endless, so its own
// clause always holds), but keep-alive still judges a declared longest
// request against a known LB idle timeout (504s).
func (s *Subject) idleOnly() bool {
	return s.Unjudged["keep-alive"] != "" && s.IdleTimeoutKnown && s.Config.Backend.LongestRequest > 0
}

// unjudged reports whether the relation is left out of the verdict.
func (s *Subject) unjudged(name string) bool {
	if name == "keep-alive" && s.idleOnly() {
		return false
	}
	return s.Unjudged[name] != ""
}

// Worst is the worst level among vs: timing.Pass when vs is empty.
func Worst(vs []Verdict) timing.Level {
	worst := timing.Pass
	for _, v := range vs {
		worst = max(worst, v.Level)
	}
	return worst
}

// Fails says whether a check whose worst level is worst fails (exit 1): a
// failing relation always, a marginal one only when strict.
func Fails(worst timing.Level, strict bool) bool {
	return worst == timing.Fail || (strict && worst == timing.Marginal)
}

package termui

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/mythex/mythex/internal/timing"
)

// CheckJSON is the shape of `mythex check --json`.
type CheckJSON struct {
	File       string          `json:"file"`
	OK         bool            `json:"ok"`
	Level      string          `json:"level"`
	Model      string          `json:"model"`
	Invariants []InvariantJSON `json:"invariants"`
}

// InvariantJSON is one invariant of CheckJSON.
type InvariantJSON struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Level  string `json:"level"`
	Detail string `json:"detail"`
	// SlackSeconds is null when the binding relation is between counts.
	SlackSeconds *float64 `json:"slack_seconds"`
	// BreaksAt maps each input's dotted path to the edges at which the
	// invariant fails: it fails when value <op> edge.
	BreaksAt map[string][]BreakJSON `json:"breaks_at"`
	Notes    []string               `json:"notes,omitempty"`
}

// BreakJSON is one break point of an invariant: it fails when value <Op> Value.
type BreakJSON struct {
	Op    string `json:"op"`
	Value string `json:"value"`
	// AlsoBreaks: for a failing invariant, the others this one-number fix
	// would make fail.
	AlsoBreaks []string `json:"also_breaks,omitempty"`
}

// WriteCheckJSON writes `mythex check --json`: the report of the timing
// invariants of the fleet config file.
func WriteCheckJSON(w io.Writer, file string, rep timing.Report) error {
	out := CheckJSON{File: file, OK: rep.OK(), Level: rep.Level.String(), Model: rep.Model, Invariants: []InvariantJSON{}}
	for _, r := range rep.Results {
		ij := InvariantJSON{Name: r.Name, OK: r.OK(), Level: r.Level.String(), Detail: r.Formula,
			BreaksAt: map[string][]BreakJSON{}, Notes: r.Notes}
		if r.HasSlack {
			s := r.Slack.Seconds()
			ij.SlackSeconds = &s
		}
		for _, b := range r.Breaks {
			ij.BreaksAt[b.Field] = append(ij.BreaksAt[b.Field], BreakJSON{Op: string(b.Op), Value: b.Value, AlsoBreaks: b.AlsoBreaks})
		}
		out.Invariants = append(out.Invariants, ij)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

const (
	nameWidth = 19 // "watchdog-patience" + 2
	wrapWidth = 100
)

// WriteCheckText writes `mythex check` for people: one line per invariant
// (✓ holds, ! marginal, ✗ fails) with its break points, then the verdict;
// color adds ANSI colour to the marks.
func WriteCheckText(w io.Writer, file string, rep timing.Report, color bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "mythex check %s\n", file)
	b.WriteString(wrap(rep.Model, "model: ", "       ", wrapWidth))
	b.WriteString("\n")
	indent := strings.Repeat(" ", 2+nameWidth)
	for _, r := range rep.Results {
		line := fmt.Sprintf("%s %-*s%s", mark(r.Level, color), nameWidth, r.Name, r.Formula)
		if s := r.SlackPhrase(); s != "" {
			line += " — " + s
		}
		b.WriteString(line + "\n")
		for _, n := range r.Notes {
			b.WriteString(wrap(n, indent, indent, wrapWidth))
		}
		if items := breakItems(r); len(items) > 0 {
			label := "breaks at: "
			if !r.OK() {
				label = "holds at: "
			}
			b.WriteString(wrapList(items, indent+label, indent+strings.Repeat(" ", len(label)), wrapWidth))
		}
	}
	b.WriteString("\n")
	n := len(rep.Results)
	switch failed, marginal := rep.Failed(), rep.MarginalNames(); {
	case len(failed) > 0:
		fmt.Fprintf(&b, "%s %d of %d invariants fail: %s\n", mark(timing.Fail, color), len(failed), n, strings.Join(failed, ", "))
	case len(marginal) > 0:
		fmt.Fprintf(&b, "%s all %d invariants hold; %d marginal: %s\n", mark(timing.Marginal, color), n, len(marginal), strings.Join(marginal, ", "))
	default:
		fmt.Fprintf(&b, "%s all %d invariants hold\n", mark(timing.Pass, color), n)
	}
	b.WriteString("(break points: one number changed, all others as they are)\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// breakItems writes a result's break points, grouped by field: for a holding
// invariant where it breaks ("drain.serve_period ≤ 12s"), for a failing one
// where it would hold ("drain.serve_period > 62s").
func breakItems(r timing.Result) []string {
	var fields []string
	conds := map[string][]string{}
	for _, br := range r.Breaks {
		if !r.OK() {
			br = br.Holding()
		}
		if _, seen := conds[br.Field]; !seen {
			fields = append(fields, br.Field)
		}
		cond := br.Op.Symbol() + " " + br.Value
		if len(br.AlsoBreaks) > 0 {
			cond += " (but that breaks " + strings.Join(br.AlsoBreaks, ", ") + ")"
		}
		conds[br.Field] = append(conds[br.Field], cond)
	}
	joiner := " or "
	if !r.OK() {
		joiner = " and "
	}
	items := make([]string, 0, len(fields))
	for _, f := range fields {
		items = append(items, f+" "+strings.Join(conds[f], joiner))
	}
	return items
}

func mark(l timing.Level, color bool) string {
	sym, code := "✓", "32"
	switch l {
	case timing.Marginal:
		sym, code = "!", "33"
	case timing.Fail:
		sym, code = "✗", "31"
	}
	if !color {
		return sym
	}
	return "\x1b[" + code + "m" + sym + "\x1b[0m"
}

// wrap breaks text into lines of at most width runes (words are not split),
// the first prefixed by first, the rest by rest.
func wrap(text, first, rest string, width int) string {
	return wrapWords(strings.Fields(text), first, rest, width)
}

// wrapList is wrap for a comma-separated list whose items are never split.
func wrapList(items []string, first, rest string, width int) string {
	words := make([]string, len(items))
	for i, it := range items {
		if i < len(items)-1 {
			it += ","
		}
		words[i] = it
	}
	return wrapWords(words, first, rest, width)
}

func wrapWords(words []string, first, rest string, width int) string {
	var b strings.Builder
	line, empty := first, true
	for _, w := range words {
		if !empty && runeLen(line)+1+runeLen(w) > width {
			b.WriteString(line + "\n")
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	b.WriteString(line + "\n")
	return b.String()
}

func runeLen(s string) int { return len([]rune(s)) }

package termui

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/mythex/mythex/internal/nativecfg"
	"github.com/mythex/mythex/internal/nativecfg/inputs"
	"github.com/mythex/mythex/internal/timing"
)

// DescribeSet says what `mythex check PATH...` recognised in set: "kubernetes: 2 files, compose: 1 file".
func DescribeSet(set *inputs.Set) string {
	kinds := make([]string, 0, len(set.Files))
	for k := range set.Files {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		n := len(set.Files[k])
		parts = append(parts, fmt.Sprintf("%s: %d file%s", k, n, plural(n)))
	}
	if set.IgnoredObjects > 0 {
		parts = append(parts, fmt.Sprintf("%d Kubernetes object%s of kinds not judged", set.IgnoredObjects, plural(set.IgnoredObjects)))
	}
	if len(set.Skipped) > 0 {
		parts = append(parts, fmt.Sprintf("%d file%s skipped (not a known kind)", len(set.Skipped), plural(len(set.Skipped))))
	}
	return strings.Join(parts, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// FindingText is one finding in the platform's keys: "file:line key is 25;
// why: set it to at least 31 (and other to at least 61)".
func FindingText(f nativecfg.Finding) string {
	var b strings.Builder
	b.WriteString(f.Loc.String())
	if f.Current != "" {
		if f.Assumed {
			fmt.Fprintf(&b, " is not set (default %s)", f.Current)
		} else {
			fmt.Fprintf(&b, " is %s", f.Current)
		}
	}
	if f.Why != "" {
		b.WriteString("; " + f.Why)
	}
	if len(f.Fix) > 0 {
		b.WriteString(": " + changeText(f.Fix[0], f.Loc))
		if len(f.Fix) > 1 {
			var more []string
			for _, c := range f.Fix[1:] {
				more = append(more, changeText(c, nativecfg.Loc{}))
			}
			b.WriteString(" (and " + strings.Join(more, ", and ") + ")")
		}
	} else if f.Level == timing.Fail {
		b.WriteString(" (no single key in these files fixes it alone)")
	}
	return b.String()
}

// changeText writes "set it to at least 31", or "set KEY to at least 31"
// when the change is to another key than the finding's.
func changeText(c nativecfg.Change, at nativecfg.Loc) string {
	dir := "at most"
	if c.AtLeast {
		dir = "at least"
	}
	if c.Loc.File == at.File && c.Loc.Path == at.Path {
		return fmt.Sprintf("set it to %s %s", dir, c.To)
	}
	where := c.Loc.Path
	if c.Loc.File != at.File && at.File != "" {
		where = c.Loc.String()
	}
	return fmt.Sprintf("%s to %s %s", where, dir, c.To)
}

// WriteNativeText writes `mythex check PATH...` for people: per unit its
// findings in the platform's keys, assumptions, notes and passing relations,
// then the counts; strict says whether marginal findings fail.
func WriteNativeText(w io.Writer, set *inputs.Set, vs []nativecfg.Verdict, worst timing.Level, strict bool) error {
	var b strings.Builder
	counts := map[timing.Level]int{}
	for _, v := range vs {
		s := v.Subject
		counts[v.Level]++
		fmt.Fprintf(&b, "%s %s %s (%s)\n", mark(v.Level, false), s.File, s.Name, s.Platform)
		for _, f := range v.Findings {
			b.WriteString(wrap(FindingText(f), "  "+mark(f.Level, false)+" ", "    ", wrapWidth))
			b.WriteString(wrap(f.Invariant+": "+f.Relation, "      ", "        ", wrapWidth))
		}
		for _, a := range s.Assumptions() {
			b.WriteString(wrap(a, "  assumed: ", "    ", wrapWidth))
		}
		for _, n := range s.Notes {
			b.WriteString(wrap(n, "  note: ", "    ", wrapWidth))
		}
		for _, r := range v.Results {
			if r.Level == timing.Pass {
				fmt.Fprintf(&b, "  %s %s: %s\n", mark(r.Level, false), r.Name, r.Formula)
			}
		}
		if len(v.Unjudged) > 0 {
			names := make([]string, 0, len(v.Unjudged))
			for n := range v.Unjudged {
				names = append(names, n)
			}
			sort.Strings(names)
			b.WriteString(wrap(strings.Join(names, ", "), "  not judged: ", "    ", wrapWidth))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%d unit%s from %s: %d fail, %d marginal, %d pass", len(vs), plural(len(vs)), DescribeSet(set),
		counts[timing.Fail], counts[timing.Marginal], counts[timing.Pass])
	if counts[timing.Marginal] > 0 && !strict {
		b.WriteString(" (marginal does not fail without --strict)")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteNativeGitHub prints GitHub Actions workflow commands: one ::error or
// ::warning annotation per finding, on the file and line of the key.
func WriteNativeGitHub(w io.Writer, vs []nativecfg.Verdict) error {
	var b strings.Builder
	for _, v := range vs {
		for _, f := range v.Findings {
			cmd := "warning"
			if f.Level == timing.Fail {
				cmd = "error"
			}
			props := "file=" + GitHubEscapeProp(f.Loc.File)
			if f.Loc.Line > 0 {
				props += fmt.Sprintf(",line=%d", f.Loc.Line)
			}
			props += ",title=" + GitHubEscapeProp("mythex check "+f.Invariant+": "+v.Subject.Name)
			fmt.Fprintf(&b, "::%s %s::%s\n", cmd, props, gitHubEscapeData(FindingText(f)+" ("+f.Relation+")"))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// gitHubEscapeData escapes a workflow command's message (%, CR, LF).
func gitHubEscapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// GitHubEscapeProp escapes a workflow command's property value (also : and ,).
func GitHubEscapeProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// nativeJSON is the shape of `mythex check PATH... --format json`.
type nativeJSON struct {
	OK         bool       `json:"ok"`
	Level      string     `json:"level"`
	Strict     bool       `json:"strict"`
	Recognised string     `json:"recognised"`
	Skipped    []string   `json:"skipped,omitempty"`
	Units      []unitJSON `json:"units"`
}

type unitJSON struct {
	Platform  string            `json:"platform"`
	Name      string            `json:"name"`
	File      string            `json:"file"`
	Level     string            `json:"level"`
	Findings  []findingJSON     `json:"findings"`
	Relations []relationJSON    `json:"relations"`
	Assumed   []string          `json:"assumed,omitempty"`
	Notes     []string          `json:"notes,omitempty"`
	NotJudged map[string]string `json:"not_judged,omitempty"`
}

type findingJSON struct {
	nativecfg.Finding
	Level   string `json:"level"`
	Message string `json:"message"`
}

type relationJSON struct {
	Name         string   `json:"name"`
	Level        string   `json:"level"`
	Detail       string   `json:"detail"`
	SlackSeconds *float64 `json:"slack_seconds"`
}

// WriteNativeJSON writes `mythex check PATH... --format json`; worst is the
// worst level of vs.
func WriteNativeJSON(w io.Writer, set *inputs.Set, vs []nativecfg.Verdict, worst timing.Level, strict bool) error {
	out := nativeJSON{OK: !nativecfg.Fails(worst, strict), Level: worst.String(), Strict: strict,
		Recognised: DescribeSet(set), Skipped: set.Skipped, Units: []unitJSON{}}
	for _, v := range vs {
		u := unitJSON{Platform: v.Subject.Platform, Name: v.Subject.Name, File: v.Subject.File, Level: v.Level.String(),
			Findings: []findingJSON{}, Assumed: v.Subject.Assumptions(), Notes: v.Subject.Notes, NotJudged: v.Unjudged}
		for _, f := range v.Findings {
			u.Findings = append(u.Findings, findingJSON{Finding: f, Level: f.Level.String(), Message: FindingText(f)})
		}
		for _, r := range v.Results {
			rj := relationJSON{Name: r.Name, Level: r.Level.String(), Detail: r.Formula}
			if r.HasSlack {
				s := r.Slack.Seconds()
				rj.SlackSeconds = &s
			}
			u.Relations = append(u.Relations, rj)
		}
		out.Units = append(out.Units, u)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

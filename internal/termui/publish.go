package termui

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mythex/mythex/internal/publish"
)

// PublishProgress returns the gate's observer that prints one line per look
// and per step of a publish to w, or nil when w is not a terminal or quiet.
func PublishProgress(w io.Writer, quiet bool) func(publish.Event) {
	if quiet || !IsTerminal(w) {
		return nil
	}
	return func(e publish.Event) { fmt.Fprintln(w, PublishProgressLine(e)) }
}

// PublishProgressLine renders one publish progress event.
func PublishProgressLine(e publish.Event) string {
	el := fmt.Sprintf("+%5.1fs", e.Elapsed.Seconds())
	if e.Kind == publish.EventStep {
		return fmt.Sprintf("%s  %s", el, e.Message)
	}
	var parts []string
	for i, ms := range e.Verdict.Machines {
		s := fmt.Sprintf("%s %s", ms.ID, dash(string(ms.State)))
		if i < len(e.Look.Machines) && e.Look.Machines[i].Err != "" {
			s = fmt.Sprintf("%s (platform: %s)", ms.ID, e.Look.Machines[i].Err)
		}
		if ms.CrashesSeen > 0 {
			s += fmt.Sprintf(", crashed %d× since publish (latest: %s at %s)", ms.CrashesSeen, ms.LatestExit(), ms.LatestCrash.UTC().Format("15:04:05.000"))
		}
		if ms.RestartCount > 0 {
			s += fmt.Sprintf(", restarts %d", ms.RestartCount)
		}
		if i < len(e.Look.Machines) {
			p := e.Look.Machines[i].Health
			if !p.Ran {
				p = e.Look.App
			}
			if p.Ran {
				s += ", health " + p.String()
			}
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%s  look %d  %-7s %s", el, e.Look.N, e.Verdict.Status, strings.Join(parts, "; "))
}

// PublishJSON is the shape of `mythex publish --json`.
type PublishJSON struct {
	App           string               `json:"app"`
	Release       string               `json:"release"`
	Image         string               `json:"image"`
	Status        publish.Status       `json:"status"`
	ReleaseStatus string               `json:"release_status"`
	Reasons       []string             `json:"reasons"`
	Warnings      []string             `json:"warnings"`
	Machines      []PublishMachineJSON `json:"machines"`
	Looks         int                  `json:"looks"`
	Elapsed       float64              `json:"elapsed_seconds"`
	LastGood      string               `json:"last_good,omitempty"`
	Rollback      *PublishRollbackJSON `json:"rollback,omitempty"`
	Platform      string               `json:"platform"`
	Strategy      publish.Strategy     `json:"strategy"`
}

// PublishMachineJSON is one machine of PublishJSON.
type PublishMachineJSON struct {
	publish.MachineSummary
	UpForSeconds float64 `json:"up_for_seconds"`
}

// PublishRollbackJSON is the rollback of PublishJSON, when one ran.
type PublishRollbackJSON struct {
	From        string   `json:"from"`
	To          string   `json:"to,omitempty"`
	TookSeconds float64  `json:"took_seconds"`
	Machines    []string `json:"machines,omitempty"`
	Error       string   `json:"error,omitempty"`
}

func toPublishJSON(res publish.Result) PublishJSON {
	r := res.Release
	out := PublishJSON{App: r.App, Release: r.ID, Image: r.Config.Image, Status: res.Verdict.Status, ReleaseStatus: string(r.Status),
		Reasons: nonNil(res.Verdict.Reasons), Warnings: nonNil(res.Verdict.Warnings), Looks: res.Verdict.Looks,
		Elapsed: res.Elapsed.Seconds(), LastGood: r.LastGood, Platform: r.Platform, Strategy: r.Strategy, Machines: []PublishMachineJSON{}}
	for _, m := range res.Verdict.Machines {
		out.Machines = append(out.Machines, PublishMachineJSON{MachineSummary: m, UpForSeconds: m.UpFor.Seconds()})
	}
	if rb := res.Rollback; rb != nil {
		out.Rollback = &PublishRollbackJSON{From: rb.From, To: rb.To, TookSeconds: rb.Took.Seconds(), Machines: rb.Machines, Error: rb.Error}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// WritePublishJSON writes `mythex publish --json`.
func WritePublishJSON(w io.Writer, res publish.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(toPublishJSON(res))
}

// WritePublishText writes `mythex publish`'s verdict for people.
func WritePublishText(w io.Writer, res publish.Result) {
	r, v := res.Release, res.Verdict
	switch v.Status {
	case publish.StatusLive:
		fmt.Fprintf(w, "%s of %s is LIVE (image %s, %d looks, %s)\n", r.ID, r.App, r.Config.Image, v.Looks, res.Elapsed.Round(100*time.Millisecond))
	case publish.StatusFailed:
		fmt.Fprintf(w, "%s of %s FAILED (image %s, %d looks, %s)\n", r.ID, r.App, r.Config.Image, v.Looks, res.Elapsed.Round(100*time.Millisecond))
	default:
		fmt.Fprintf(w, "%s of %s: verdict UNKNOWN — nothing was rolled back (image %s, %d looks)\n", r.ID, r.App, r.Config.Image, v.Looks)
	}
	for _, reason := range v.Reasons {
		fmt.Fprintf(w, "  %s\n", reason)
	}
	for _, warn := range v.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
	if rb := res.Rollback; rb != nil {
		switch {
		case rb.Error != "":
			fmt.Fprintf(w, "  rollback to %s did not complete after %s: %s\n", rb.To, rb.Took.Round(time.Millisecond), rb.Error)
		case rb.To != "":
			fmt.Fprintf(w, "  rolled back to the last good release %s in %s; it serves (machines %s)\n", rb.To, rb.Took.Round(time.Millisecond), strings.Join(rb.Machines, ", "))
		}
	}
	if v.Status == publish.StatusFailed && res.Rollback == nil && r.Status == publish.ReleaseFailed {
		fmt.Fprintf(w, "  not rolled back: %s\n", lastClause(r.Reason))
	}
	if v.Status == publish.StatusUnknown {
		fmt.Fprintf(w, "  %s stays pending; `mythex publish reconcile` finishes it once the platform answers\n", r.ID)
	}
}

func lastClause(s string) string {
	parts := strings.Split(s, "; ")
	return parts[len(parts)-1]
}

// ReleaseJSON is one release of `mythex publish history --json`.
type ReleaseJSON struct {
	App          string   `json:"app"`
	Release      string   `json:"release"`
	Current      bool     `json:"current"`
	Status       string   `json:"status"`
	Image        string   `json:"image"`
	Platform     string   `json:"platform"`
	Strategy     string   `json:"strategy"`
	CreatedAt    string   `json:"created_at"`
	LiveAt       string   `json:"live_at,omitempty"`
	LastGood     string   `json:"last_good,omitempty"`
	RolledBackTo string   `json:"rolled_back_to,omitempty"`
	Reason       string   `json:"reason,omitempty"`
	Machines     []string `json:"machines"`
}

// WriteReleasesJSON writes `mythex publish history --json`; current maps
// each app to its current release.
func WriteReleasesJSON(w io.Writer, rels []publish.Release, current map[string]string) error {
	out := []ReleaseJSON{}
	for _, r := range rels {
		h := ReleaseJSON{App: r.App, Release: r.ID, Current: current[r.App] == r.ID, Status: string(r.Status), Image: r.Config.Image,
			Platform: r.Platform, Strategy: string(r.Strategy), CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339), LastGood: r.LastGood,
			RolledBackTo: r.RolledBackTo, Reason: r.Reason, Machines: nonNil(r.Machines)}
		if !r.LiveAt.IsZero() {
			h.LiveAt = r.LiveAt.UTC().Format(time.RFC3339)
		}
		out = append(out, h)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteReleasesText writes `mythex publish history` as a table; the current
// release of each app is starred.
func WriteReleasesText(w io.Writer, rels []publish.Release, current map[string]string) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tRELEASE\tSTATUS\tPUBLISHED\tIMAGE\tLAST GOOD\tREASON")
	for _, r := range rels {
		mark := " "
		if current[r.App] == r.ID {
			mark = "*"
		}
		status := string(r.Status)
		if r.RolledBackTo != "" {
			status += " → " + r.RolledBackTo
		}
		reason := r.Reason
		if len(reason) > 120 {
			reason = reason[:117] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%s\t%s\t%s\n", r.App, mark, r.ID, status, r.CreatedAt.Local().Format("2006-01-02 15:04:05"),
			r.Config.Image, dash(r.LastGood), strings.ReplaceAll(reason, "\n", " "))
	}
	tw.Flush()
}

// WriteReconcileText writes one round of `mythex publish reconcile`: per
// release the action taken, the verdict and the rollback.
func WriteReconcileText(w io.Writer, checks []publish.Check) {
	if len(checks) == 0 {
		fmt.Fprintln(w, "no releases to check")
	}
	for _, c := range checks {
		line := fmt.Sprintf("%s %s: %s", c.App, dash(c.Release), c.Action)
		if c.Verdict != nil {
			line += fmt.Sprintf(" (verdict %s)", c.Verdict.Status)
		}
		switch {
		case c.Rollback == nil || c.Rollback.To == "":
		case c.Rollback.Error != "":
			line += fmt.Sprintf(", the rollback to %s did not complete in %s: %s", c.Rollback.To, c.Rollback.Took.Round(time.Millisecond), c.Rollback.Error)
		default:
			line += fmt.Sprintf(", restored %s in %s", c.Rollback.To, c.Rollback.Took.Round(time.Millisecond))
		}
		fmt.Fprintln(w, line)
		if c.Verdict != nil {
			for _, r := range c.Verdict.Reasons {
				fmt.Fprintf(w, "  %s\n", r)
			}
			for _, r := range c.Verdict.Warnings {
				fmt.Fprintf(w, "  warning: %s\n", r)
			}
		}
		if c.Note != "" {
			fmt.Fprintf(w, "  %s\n", strings.TrimSpace(c.Note))
		}
	}
}

// WriteReconcileJSON writes one round of `mythex publish reconcile --json`.
func WriteReconcileJSON(w io.Writer, checks []publish.Check) error {
	if checks == nil {
		checks = []publish.Check{}
	}
	enc := json.NewEncoder(w)
	return enc.Encode(checks)
}

package probe

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Style says how text output is rendered.
type Style struct {
	// Color adds ANSI colors (for a terminal): reached nothing in red, app
	// errors in yellow, drain signals in cyan.
	Color bool
}

const (
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
	ansiBold   = "\x1b[1m"
	ansiReset  = "\x1b[0m"
)

func (s Style) paint(code string, n int64, text string) string {
	if !s.Color || n == 0 {
		return text
	}
	return code + text + ansiReset
}

// TimelineHeader is the header line for TimelineLine's columns.
func TimelineHeader() string {
	return fmt.Sprintf("%6s %7s %7s %8s %6s %6s %6s %7s %9s  %s", "second", "sent", "ok", "nothing", "app", "drain", "late", "unsent", "max ms", "versions | hosts")
}

// TimelineLine renders one second of a run as one line (no newline).
func TimelineLine(b Bucket, st Style) string {
	line := fmt.Sprintf("%6d %7d %7d %s %s %s %6d %7d %9.2f  %s | %s",
		b.Second, b.Requests, b.OK,
		st.paint(ansiRed, b.ReachedNothing, fmt.Sprintf("%8d", b.ReachedNothing)),
		st.paint(ansiYellow, b.AppErrors, fmt.Sprintf("%6d", b.AppErrors)),
		st.paint(ansiCyan, b.DrainSignals, fmt.Sprintf("%6d", b.DrainSignals)),
		b.LateSends, b.Unsent, ms(b.MaxLatency),
		formatCounts(b.Versions, "="), formatCounts(b.Hosts, "="))
	if b.ProbeErrors > 0 {
		line += fmt.Sprintf("  (%d probe errors)", b.ProbeErrors)
	}
	return line
}

// formatCounts renders counts as "k=n k=n" sorted by key; "-" when empty.
func formatCounts(m map[string]int64, sep string) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s%s%d", k, sep, m[k])
	}
	return strings.Join(parts, " ")
}

// WriteSummary writes the human summary table of r to w.
func WriteSummary(w io.Writer, r *Report, st Style) error {
	var b strings.Builder
	row := func(name, value, note string) {
		if note != "" {
			fmt.Fprintf(&b, "  %-18s %10s   %s\n", name, value, note)
		} else {
			fmt.Fprintf(&b, "  %-18s %10s\n", name, value)
		}
	}
	n := func(v int64) string { return fmt.Sprint(v) }
	fmt.Fprintf(&b, "%s at %g req/s for %s (max in flight %d)\n", r.URL, r.Rate, r.Elapsed.Round(time.Millisecond), r.MaxInFlight)
	if r.Unsent > 0 {
		row("requests", n(r.Requests), fmt.Sprintf("sent; %d more not sent: %d were in flight (the bound)", r.Unsent, r.MaxInFlight))
	} else {
		row("requests", n(r.Requests), "sent, every one the schedule held")
	}
	row("ok", n(r.OK), "")
	row("reached nothing", st.paint(ansiRed, r.ReachedNothing, n(r.ReachedNothing)), reasonsOf(r.Reasons, ClassReachedNothing))
	row("app errors", st.paint(ansiYellow, r.AppErrors, n(r.AppErrors)), reasonsOf(r.Reasons, ClassAppError))
	row("drain signals", st.paint(ansiCyan, r.DrainSignals, n(r.DrainSignals)), reasonsOf(r.Reasons, ClassDrainSignal))
	row("probe errors", n(r.ProbeErrors), reasonsOf(r.Reasons, ClassProbeError))
	row("late sends", n(r.LateSends), fmt.Sprintf("%.2f%% left behind schedule; max lag %s", pct(r.LateSends, r.Requests), r.MaxSendLag.Round(time.Microsecond)))
	row("new connections", n(r.NewConns), "")
	row("latency ms", "", formatLatency(r.Latency)+"  from scheduled time")
	row("send latency ms", "", formatLatency(r.SendLatency)+"  from actual send")
	row("versions", "", formatCounts(r.Versions, " ×"))
	row("hosts", "", formatCounts(r.Hosts, " ×"))
	for _, s := range r.ErrorSamples {
		row("error sample", "", s)
	}
	if c := r.Command; c != nil {
		status := fmt.Sprintf("exit %d", c.ExitCode)
		if c.Error != "" {
			status = c.Error
		}
		row("command", "", fmt.Sprintf("%s after %s: %s", status, c.Elapsed.Round(time.Millisecond), strings.Join(c.Argv, " ")))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func pct(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) * 100 / float64(of)
}

func formatLatency(l Latency) string {
	return fmt.Sprintf("p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.2f", ms(l.P50), ms(l.P90), ms(l.P99), ms(l.P999), ms(l.Max))
}

// reasonsOf renders the reasons of one class, e.g. "refused ×6, lb-marked 502 target-refused ×4".
func reasonsOf(rs []ReasonCount, c Class) string {
	var parts []string
	for _, r := range rs {
		if r.Class != c {
			continue
		}
		s := r.Reason.String()
		if r.Status != 0 {
			s += fmt.Sprintf(" %d", r.Status)
		}
		if r.Detail != "" {
			s += " " + r.Detail
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", s, r.Count))
	}
	return strings.Join(parts, ", ")
}

// Package report draws a deployrec.Recording as one self-contained HTML file:
// per deploy, on one shared time axis, the requests per second by outcome
// (reached nothing in red, marked in a strip of its own however few), a
// Gantt row per host, the load balancer's target state per host, the
// versions answering and the latency p50/p99; above them the verdict in one
// sentence, the timing invariants with their slack and the fleet's config.
//
// The charts are SVG drawn here in Go, the styles and the small hover script
// inline, and a Content-Security-Policy forbids every fetch: the file opens
// offline, prints, follows the reader's dark mode, and stays small (about
// 100 KB for a 10-minute deploy; MaxBytes bounds it). docs/report.md says why
// SVG from Go rather than a charting library.
package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/deployrec"
)

// MaxBytes is the size a report stays under for a 10-minute deploy of up to
// 20 hosts measured every second (the tests hold it to that).
const MaxBytes = 1 << 20

//go:embed page.html.tmpl
var pageHTML string

//go:embed style.css
var styleCSS string

//go:embed hover.js
var hoverJS string

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"num":       num,
	"sub":       func(a, b float64) float64 { return a - b },
	"thousands": deployrec.Thousands,
}).Parse(pageHTML))

// page is what the template draws.
type page struct {
	Title      string
	Generated  string
	Verdict    deployrec.Verdict
	Fleet      *deployrec.Fleet
	Invariants []deployrec.Invariant
	Sections   []section
	CSS        template.CSS
	JS         template.JS
}

// section is one deploy.
type section struct {
	ID       string
	Title    string
	Verdict  deployrec.Verdict
	Counts   []count
	Seconds  int
	Hosts    int
	Span     string
	Requests requestsChart
	Gantt    rowsChart
	Targets  rowsChart
	Versions rowsChart
	Latency  latencyChart
	Results  []hostRow
	Reasons  []deployrec.Reason
	Data     hoverData
}

// hostRow is one line of the hosts table: a host's result, or that the
// deploy never reached it.
type hostRow struct {
	deploy.HostResult
	NotReached bool
}

// hostRows lists every host of the deploy, those it reached with their
// results, then those it did not reach.
func hostRows(hosts []string, results []deploy.HostResult) []hostRow {
	out := make([]hostRow, 0, len(hosts))
	for _, r := range results {
		out = append(out, hostRow{HostResult: r})
	}
	for _, h := range hosts {
		if !slices.ContainsFunc(results, func(r deploy.HostResult) bool { return r.Host == h }) {
			out = append(out, hostRow{HostResult: deploy.HostResult{Host: h}, NotReached: true})
		}
	}
	return out
}

// count is one figure of a section's header.
type count struct {
	Key, Label, Value, Class string
}

// hoverData is what the hover script reads for a section: times in seconds
// from the axis start.
type hoverData struct {
	// X0 and W are the time axis's left edge and width in SVG units.
	X0    float64  `json:"x0"`
	W     float64  `json:"w"`
	Span  float64  `json:"span"`
	Off   float64  `json:"off"`
	Hosts []string `json:"hosts"`
	// S: per second [requests, ok, drain, app, reached nothing, probe errors, p50 ms, p99 ms, versions].
	S []any `json:"s"`
	// Ph: phases [host index, from, to, phase, failed 0/1]; host -1 is the fleet.
	Ph [][]any `json:"ph"`
	// Tg: target states [host index, from, to, state, in rotation 0/1].
	Tg [][]any `json:"tg"`
}

// Write renders rec as HTML to w. Errors come from w only.
func Write(w io.Writer, rec deployrec.Recording) error {
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, build(rec)); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func build(rec deployrec.Recording) page {
	p := page{
		Title:      rec.Command,
		Verdict:    deployrec.JudgeAll(rec),
		Fleet:      rec.Fleet,
		Invariants: rec.Invariants,
		CSS:        template.CSS(styleCSS),
		JS:         template.JS(hoverJS),
	}
	if p.Title == "" {
		p.Title = "mythex"
	}
	if !rec.CreatedAt.IsZero() {
		p.Generated = rec.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	for i, d := range rec.Deploys {
		p.Sections = append(p.Sections, buildSection(i, d))
	}
	return p
}

func buildSection(i int, d deployrec.Deploy) section {
	start, end := axisBounds(d)
	a := newAxis(start, end)
	hosts := d.Hosts
	fail := firstFailure(a, d.Events)
	s := section{
		ID:       fmt.Sprintf("d%d", i),
		Title:    sectionTitle(d),
		Verdict:  deployrec.Judge(d),
		Hosts:    len(hosts),
		Span:     fmt.Sprintf("%.1f s", a.span),
		Requests: buildRequests(a, d.Probe),
		Gantt:    buildGantt(a, hosts, d.Events, d.Result, fail),
		Targets:  buildTargets(a, hosts, d.Events),
		Versions: buildVersions(a, d.Probe),
		Latency:  buildLatency(a, d.Probe),
	}
	s.Requests.Frame = s.Requests.withFail(fail)
	s.Targets.Frame = s.Targets.withFail(fail)
	s.Versions.Frame = s.Versions.withFail(fail)
	s.Latency.Frame = s.Latency.withFail(fail)
	if len(hosts) == 0 {
		s.Targets.Empty = "no deploy was recorded"
	}
	if d.Result != nil {
		s.Results = hostRows(hosts, d.Result.Hosts)
	}
	if p := d.Probe; p != nil {
		s.Seconds = len(p.Seconds)
		if p.Totals != nil {
			s.Reasons = p.Totals.Reasons
		}
		s.Counts = countsOf(p)
	}
	s.Data = hoverOf(a, d)
	return s
}

func sectionTitle(d deployrec.Deploy) string {
	switch {
	case d.Version == "" && d.Probe != nil:
		return "measurement of " + d.Probe.URL
	case d.From != "":
		return "deploy " + d.From + " → " + d.Version
	case d.Version != "":
		return "deploy " + d.Version
	}
	return "recording"
}

func countsOf(p *deployrec.Probe) []count {
	var c deployrec.Counts
	var p50, p99 float64
	if t := p.Totals; t != nil {
		c, p50, p99 = t.Counts, t.P50Ms, t.P99Ms
	} else {
		for _, s := range p.Seconds {
			c.Requests += s.Requests
			c.OK += s.OK
			c.DrainSignals += s.DrainSignals
			c.AppErrors += s.AppErrors
			c.ReachedNothing += s.ReachedNothing
			c.ProbeErrors += s.ProbeErrors
			c.LateSends += s.LateSends
			c.Unsent += s.Unsent
		}
	}
	rnClass := "good"
	if c.ReachedNothing > 0 {
		rnClass = "bad"
	}
	out := []count{
		{"requests", "requests", deployrec.Thousands(c.Requests), ""},
		{"reached_nothing", "reached nothing", deployrec.Thousands(c.ReachedNothing), rnClass},
		{"ok", "ok", deployrec.Thousands(c.OK), ""},
		{"drain_signals", "drain signals", deployrec.Thousands(c.DrainSignals), ""},
		{"app_errors", "app errors", deployrec.Thousands(c.AppErrors), ""},
	}
	if c.ProbeErrors > 0 || c.Unsent > 0 {
		out = append(out, count{"probe_errors", "probe errors", deployrec.Thousands(c.ProbeErrors), "warn"},
			count{"unsent", "unsent", deployrec.Thousands(c.Unsent), "warn"})
	}
	if p.Totals != nil {
		out = append(out, count{"p50", "p50", msLabel(p50), ""}, count{"p99", "p99", msLabel(p99), ""})
	}
	if c.Requests > 0 {
		late := float64(c.LateSends) / float64(c.Requests) * 100
		cls := ""
		if late > 5 {
			cls = "warn"
		}
		out = append(out, count{"late_sends", "late sends", fmt.Sprintf("%.1f %%", late), cls})
	}
	return out
}

func hoverOf(a axis, d deployrec.Deploy) hoverData {
	h := hoverData{X0: gutter, W: plotWidth, Span: round3(a.span), Hosts: d.Hosts, S: []any{}, Ph: [][]any{}, Tg: [][]any{}}
	if h.Hosts == nil {
		h.Hosts = []string{}
	}
	if p := d.Probe; p != nil {
		h.Off = round3(a.at(p.StartedAt))
		for _, s := range p.Seconds {
			h.S = append(h.S, []any{s.Requests, s.OK, s.DrainSignals, s.AppErrors, s.ReachedNothing, s.ProbeErrors,
				round3(s.P50Ms), round3(s.P99Ms), versionsText(s.Versions)})
		}
	}
	for _, sp := range phaseSpans(a, d.Events) {
		failed := 0
		if sp.failed {
			failed = 1
		}
		h.Ph = append(h.Ph, []any{slices.Index(d.Hosts, sp.host), round3(sp.from), round3(sp.to), string(sp.phase), failed})
	}
	last := map[string]int{}
	for _, e := range d.Events {
		if e.Kind != deploy.EventTarget || e.Target == nil {
			continue
		}
		i := slices.Index(d.Hosts, e.Host)
		if i < 0 {
			continue
		}
		t := round3(a.at(e.At))
		if j, ok := last[e.Host]; ok {
			h.Tg[j][2] = t
		}
		rot := 0
		if e.Target.InRotation {
			rot = 1
		}
		last[e.Host] = len(h.Tg)
		h.Tg = append(h.Tg, []any{i, t, round3(a.span), e.Target.State, rot})
	}
	return h
}

func versionsText(vs map[string]int64) string {
	keys := make([]string, 0, len(vs))
	for k := range vs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" · ")
		}
		fmt.Fprintf(&b, "%s %d", k, vs[k])
	}
	return b.String()
}

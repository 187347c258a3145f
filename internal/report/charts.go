package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/deployrec"
)

// Frame is what every chart of a section has: its size and the shared time
// axis's ticks. (Exported only so the template can reach it.)
type Frame struct {
	Height    float64
	PlotTop   float64
	PlotBot   float64
	Ticks     []tick
	Empty     string // shown instead of the chart when there is nothing to draw
	ViewBox   string
	AxisY     float64 // baseline of the tick labels
	LabelX    float64 // right edge of row labels
	PlotLeft  float64
	PlotRight float64
	// Fail marks the moment the deploy first failed, across every chart;
	// nil when nothing failed.
	Fail *failMark
}

// failMark is the vertical line at the deploy's first failure.
type failMark struct {
	X, Top, Bot float64
	Title       string
}

// withFail returns f with the failure line m (nil: none) drawn from its
// plot's top to the bottom of whatever it draws above the axis labels.
func (f Frame) withFail(m *failMark) Frame {
	if m == nil {
		return f
	}
	mm := *m
	mm.Top, mm.Bot = f.PlotTop, f.Height-axisH
	f.Fail = &mm
	return f
}

func newChart(a axis, plotH float64) Frame {
	top := 8.0
	c := Frame{PlotTop: top, PlotBot: top + plotH, Ticks: a.ticks(), LabelX: gutter - 8, PlotLeft: gutter, PlotRight: gutter + plotWidth}
	c.AxisY = c.PlotBot + 13
	c.Height = c.PlotBot + axisH
	c.ViewBox = fmt.Sprintf("0 0 %s %s", num(svgWidth), num(c.Height))
	return c
}

// classPath is every rect of one outcome class (or state) as one path.
type classPath struct {
	Class string
	D     string
}

// yTick is a labelled horizontal grid line.
type yTick struct {
	Y     float64
	Label string
}

// text is a label placed in a chart.
type text struct {
	X, Y float64
	Text string
}

// requestsChart is chart 1: requests per second stacked by outcome.
type requestsChart struct {
	Frame
	Paths  []classPath
	YTicks []yTick
	// StripY is the top of the reached-nothing strip under the bars: every
	// second in which a request reached nothing gets a red mark there,
	// however few, with its count.
	StripY     float64
	StripMarks string
	StripText  []text
	// Total is the number of requests reaching nothing, for the strip's label.
	StripLabel string
}

// outcome classes, bottom to top of the stack: what a user feels first.
var stackOrder = []struct {
	class string
	get   func(deployrec.Counts) int64
}{
	{"rn", func(c deployrec.Counts) int64 { return c.ReachedNothing }},
	{"app", func(c deployrec.Counts) int64 { return c.AppErrors }},
	{"drain", func(c deployrec.Counts) int64 { return c.DrainSignals }},
	{"probe", func(c deployrec.Counts) int64 { return c.ProbeErrors }},
	{"ok", func(c deployrec.Counts) int64 { return c.OK }},
}

const stripH = 16.0

func buildRequests(a axis, p *deployrec.Probe) requestsChart {
	const plotH = 150.0
	c := requestsChart{Frame: newChart(a, plotH+stripH+6)}
	c.PlotBot = c.PlotTop + plotH
	c.StripY = c.PlotBot + 6
	if p == nil || len(p.Seconds) == 0 {
		c.Empty = "no load was measured (mythex deploy --measure URL runs the prober through the deploy)"
		return c
	}
	off := a.at(p.StartedAt)
	var top int64
	for _, s := range p.Seconds {
		top = max(top, s.Requests)
	}
	yMax := niceMax(float64(top))
	y := func(v float64) float64 { return c.PlotBot - plotH*v/yMax }
	for _, f := range []float64{0, 0.5, 1} {
		c.YTicks = append(c.YTicks, yTick{Y: y(f * yMax), Label: fmt.Sprintf("%g", f*yMax)})
	}
	paths := make([]pathBuilder, len(stackOrder))
	var strip pathBuilder
	var rn int64
	var run rnRun
	for _, s := range p.Seconds {
		x0, x1 := a.x(off+float64(s.Second)), a.x(off+float64(s.Second)+1)
		w := math.Max(x1-x0-0.3, 0.4)
		base := 0.0
		for i, k := range stackOrder {
			n := float64(k.get(s.Counts))
			if n == 0 {
				continue
			}
			y0, y1 := y(base), y(base+n)
			if k.class == "rn" {
				y1 = math.Min(y1, y0-2) // never thinner than 2 units
			}
			paths[i].rect(x0, y1, w, y0-y1)
			base += n
		}
		if s.ReachedNothing > 0 {
			rn += s.ReachedNothing
			strip.rect(x0, c.StripY, math.Max(w, 3), stripH)
			// Consecutive seconds form one run, labelled with its sum.
			if run.n > 0 && s.Second == run.last+1 {
				run.n, run.last, run.x1 = run.n+s.ReachedNothing, s.Second, x0+math.Max(w, 3)
			} else {
				c.labelRun(run)
				run = rnRun{n: s.ReachedNothing, last: s.Second, x0: x0, x1: x0 + math.Max(w, 3)}
			}
		}
	}
	c.labelRun(run)
	for i, k := range stackOrder {
		if d := paths[i].String(); d != "" {
			c.Paths = append(c.Paths, classPath{Class: k.class, D: d})
		}
	}
	c.StripMarks = strip.String()
	c.StripLabel = "reached nothing: " + deployrec.Thousands(rn)
	return c
}

// rnRun is consecutive seconds in which requests reached nothing.
type rnRun struct {
	n      int64
	last   int
	x0, x1 float64
}

// labelRun writes a run's count in the strip when it fits there.
func (c *requestsChart) labelRun(r rnRun) {
	label := deployrec.Thousands(r.n)
	if r.n == 0 || float64(len(label))*6+4 > r.x1-r.x0 {
		return
	}
	c.StripText = append(c.StripText, text{X: (r.x0 + r.x1) / 2, Y: c.StripY + stripH - 4, Text: label})
}

// seg is one stretch of a row: a phase, a target state, a version's share.
type seg struct {
	X, W   float64
	Class  string
	Title  string
	Label  string // drawn inside when it fits
	LabelX float64
	// LabelClass styles the label for its background.
	LabelClass string
}

// row is one host (or version) of a rows chart.
type row struct {
	Label string
	// Class styles the label: "failed" for a host whose deploy failed.
	Class string
	// Note is written in an empty lane, e.g. that the deploy never reached
	// the host.
	Note  string
	Y     float64
	TextY float64
	Segs  []seg
	Paths []classPath // many small cells (versions per second)
	Marks []text      // notes (killed services) as small triangles
}

// rowsChart is a chart with one row per host or version: the Gantt chart,
// the LB target states, the versions answering.
type rowsChart struct {
	Frame
	Rows []row
	// Head is a label written over the rows at the failure line (the
	// Gantt chart's "✗ web-1 failed at verify"); nil when none.
	Head *headLabel
}

// headLabel is text over a chart's rows, anchored at X.
type headLabel struct {
	X, Y   float64
	Anchor string // start or end, so it stays inside the plot
	Text   string
}

func newRows(a axis, labels []string) rowsChart { return newRowsBelow(a, labels, 0) }

// newRowsBelow is newRows with head units above the first row, for labels
// written over the chart.
func newRowsBelow(a axis, labels []string, head float64) rowsChart {
	n := max(len(labels), 1)
	c := rowsChart{Frame: newChart(a, head+float64(n)*(rowH+rowGap)-rowGap)}
	for i, l := range labels {
		y := c.PlotTop + head + float64(i)*(rowH+rowGap)
		c.Rows = append(c.Rows, row{Label: l, Y: y, TextY: y + rowH/2 + 4})
	}
	return c
}

func (c *rowsChart) add(i int, a axis, from, to float64, class, title, label string) {
	x0, x1 := a.x(from), a.x(to)
	w := math.Max(x1-x0, 1.5)
	s := seg{X: x0, W: w, Class: class, Title: title}
	if float64(len(label))*6.2+6 < w {
		s.Label, s.LabelX = label, x0+w/2
		if strings.HasPrefix(class, "st-unused") {
			s.LabelClass = "on-unused"
		}
	}
	c.Rows[i].Segs = append(c.Rows[i].Segs, s)
}

// span is one phase of one host, from its begin to its end or failure.
type span struct {
	host     string
	phase    deploy.Phase
	from, to float64
	failed   bool
	detail   string
}

// beginless are the phases the deploy reports without a begin event: it
// emits their end (or failure) with the time they took, and progress while
// they wait.
var beginless = map[deploy.Phase]bool{deploy.PhaseCapacity: true, deploy.PhaseRecheck: true}

// phaseSpans pairs each begin with its end or fail; a phase never ended
// runs to the axis end. A phase the deploy reports without a begin (the
// capacity wait before a batch is drained, the recheck) spans its end's
// elapsed time back from the end, or from its first progress event while
// it has not ended. A capacity wait is labelled with its whole batch
// ("web-1,web-2") and drawn on each of those hosts.
func phaseSpans(a axis, events []deploy.Event) []span {
	type key struct {
		host  string
		phase deploy.Phase
	}
	open := map[key]int{}
	var out []span
	for _, e := range events {
		hosts := []string{e.Host}
		if e.Phase == deploy.PhaseCapacity && strings.Contains(e.Host, ",") {
			hosts = strings.Split(e.Host, ",")
		}
		for _, h := range hosts {
			k := key{h, e.Phase}
			switch e.Kind {
			case deploy.EventBegin:
				open[k] = len(out)
				out = append(out, span{host: h, phase: e.Phase, from: a.at(e.At), to: a.span})
			case deploy.EventProgress:
				if _, ok := open[k]; ok || e.Elapsed <= 0 || !beginless[e.Phase] {
					continue
				}
				// A wait without a begin, still going: it began Elapsed ago.
				open[k] = len(out)
				out = append(out, span{host: h, phase: e.Phase, from: a.at(e.At) - e.Elapsed, to: a.span})
			case deploy.EventEnd, deploy.EventFail:
				failed := e.Kind == deploy.EventFail
				i, ok := open[k]
				if !ok {
					if e.Elapsed <= 0 {
						continue
					}
					i = len(out)
					out = append(out, span{host: h, phase: e.Phase, from: a.at(e.At) - e.Elapsed})
				}
				delete(open, k)
				out[i].to, out[i].failed, out[i].detail = a.at(e.At), failed, e.Detail
			}
		}
	}
	return out
}

// fleetRow is the Gantt row of fleet-wide phases (the final sweep).
const fleetRow = "fleet"

func ganttLabels(hosts []string, spans []span) []string {
	labels := slices.Clone(hosts)
	for _, s := range spans {
		if s.host == "" {
			return append(labels, fleetRow)
		}
	}
	return labels
}

// ganttHead is the room over the Gantt rows for the failure's label.
const ganttHead = 16.0

// buildGantt draws each host's phases; res (nil while a deploy runs) marks
// the hosts that failed and those the deploy never reached.
func buildGantt(a axis, hosts []string, events []deploy.Event, res *deployrec.Result, fail *failMark) rowsChart {
	spans := phaseSpans(a, events)
	labels := ganttLabels(hosts, spans)
	head := 0.0
	if fail != nil {
		head = ganttHead
	}
	c := newRowsBelow(a, labels, head)
	if len(spans) == 0 {
		c.Empty = "no deploy was recorded"
		return c
	}
	drawn := map[string]bool{}
	for _, s := range spans {
		i := slices.Index(labels, s.host)
		if s.host == "" {
			i = slices.Index(labels, fleetRow)
		}
		if i < 0 {
			continue
		}
		drawn[labels[i]] = true
		class := "ph ph-" + string(s.phase)
		verb := "took"
		if s.failed {
			class += " failed"
			verb = "FAILED after"
		}
		title := fmt.Sprintf("%s %s %s %.2fs (%.2f–%.2fs)", labels[i], s.phase, verb, s.to-s.from, s.from, s.to)
		if s.detail != "" {
			title += ": " + s.detail
		}
		label := string(s.phase)
		if s.phase == deploy.PhaseCapacity {
			label = "capacity wait"
			if float64(len(label))*6.2+6 >= a.x(s.to)-a.x(s.from) {
				label = "wait"
			}
		}
		c.add(i, a, s.from, s.to, class, title, label)
	}
	if res != nil {
		for i, h := range labels {
			j := slices.IndexFunc(res.Hosts, func(r deploy.HostResult) bool { return r.Host == h })
			switch {
			case j >= 0 && res.Hosts[j].Failed != "":
				c.Rows[i].Class, c.Rows[i].Label = "failed", "✗ "+h
			case j >= 0 && res.Hosts[j].RolledBack || slices.Contains(res.RolledBack, h):
				c.Rows[i].Class, c.Rows[i].Label = "rolled", "↩ "+h
			case j < 0 && !drawn[h] && h != fleetRow:
				c.Rows[i].Note = "not reached: the deploy stopped before this host"
			}
		}
	}
	for _, e := range events {
		if e.Kind != deploy.EventNote {
			continue
		}
		if i := slices.Index(labels, e.Host); i >= 0 {
			c.Rows[i].Marks = append(c.Rows[i].Marks, text{X: a.x(a.at(e.At)), Y: c.Rows[i].Y, Text: e.Detail})
		}
	}
	if fail != nil {
		c.Frame = c.Frame.withFail(fail)
		h := &headLabel{X: fail.X + 4, Y: c.PlotTop + ganttHead - 5, Anchor: "start", Text: fail.Title}
		if fail.X > gutter+plotWidth*0.6 {
			h.X, h.Anchor = fail.X-4, "end"
		}
		c.Head = h
	}
	return c
}

// firstFailure is the line drawn at the first phase that failed, or nil.
func firstFailure(a axis, events []deploy.Event) *failMark {
	for _, e := range events {
		if e.Kind != deploy.EventFail {
			continue
		}
		who := e.Host
		switch {
		case who == "":
			who = "the fleet"
		case strings.Contains(who, ","):
			who = "batch " + who
		}
		what := string(e.Phase)
		if e.Phase == deploy.PhaseCapacity {
			what = "the capacity wait"
		}
		return &failMark{X: a.x(a.at(e.At)), Title: fmt.Sprintf("✗ %s failed at %s", who, what)}
	}
	return nil
}

// targetStates are the ALB target states, in the legend's order.
var targetStates = []string{"initial", "healthy", "unhealthy", "draining", "unused"}

func buildTargets(a axis, hosts []string, events []deploy.Event) rowsChart {
	c := newRows(a, hosts)
	type cur struct {
		from  float64
		state deploy.TargetState
		set   bool
	}
	open := make([]cur, len(hosts))
	flush := func(i int, to float64) {
		o := open[i]
		if !o.set {
			return
		}
		st := o.state.State
		class := "st-" + st
		if !slices.Contains(targetStates, st) {
			class = "st-other"
		}
		rot := "in rotation"
		if !o.state.InRotation {
			rot = "out of rotation"
			class += " out"
		}
		title := fmt.Sprintf("%s %s, %s (%.2f–%.2fs)", hosts[i], st, rot, o.from, to)
		if o.state.Reason != "" {
			title += " " + o.state.Reason
		}
		c.add(i, a, o.from, to, class, title, st)
	}
	any := false
	for _, e := range events {
		if e.Kind != deploy.EventTarget || e.Target == nil {
			continue
		}
		i := slices.Index(hosts, e.Host)
		if i < 0 {
			continue
		}
		t := a.at(e.At)
		flush(i, t)
		open[i] = cur{from: t, state: *e.Target, set: true}
		any = true
	}
	for i := range hosts {
		flush(i, a.span)
	}
	if !any {
		c.Empty = "no load balancer polls were recorded"
	}
	return c
}

// versionOrder lists the versions that answered, by first appearance.
func versionOrder(p *deployrec.Probe) []string {
	var out []string
	if p == nil {
		return nil
	}
	for _, s := range p.Seconds {
		var vs []string
		for v := range s.Versions {
			if !slices.Contains(out, v) {
				vs = append(vs, v)
			}
		}
		slices.Sort(vs)
		out = append(out, vs...)
	}
	return out
}

// shareLevels quantise a version's share of a second's answers into four
// opacities, so a whole row is four paths however long the deploy.
var shareLevels = []string{"s1", "s2", "s3", "s4"}

func buildVersions(a axis, p *deployrec.Probe) rowsChart {
	versions := versionOrder(p)
	c := newRows(a, versions)
	if len(versions) == 0 {
		c.Empty = "no answer carried a version (X-Mythex-Version)"
		return c
	}
	off := a.at(p.StartedAt)
	for i, v := range versions {
		paths := make([]pathBuilder, len(shareLevels))
		for _, s := range p.Seconds {
			var answered int64
			for _, n := range s.Versions {
				answered += n
			}
			n := s.Versions[v]
			if n == 0 || answered == 0 {
				continue
			}
			lvl := min(int(math.Ceil(4*float64(n)/float64(answered)))-1, 3)
			x0, x1 := a.x(off+float64(s.Second)), a.x(off+float64(s.Second)+1)
			paths[lvl].rect(x0, c.Rows[i].Y, math.Max(x1-x0, 0.5), rowH)
		}
		for l, pb := range paths {
			if d := pb.String(); d != "" {
				c.Rows[i].Paths = append(c.Rows[i].Paths, classPath{Class: "ver v" + fmt.Sprint(i%6) + " " + shareLevels[l], D: d})
			}
		}
	}
	return c
}

// latencyChart is chart 5: latency p50 and p99 per second.
type latencyChart struct {
	Frame
	P50, P99 string
	YTicks   []yTick
}

func buildLatency(a axis, p *deployrec.Probe) latencyChart {
	const plotH = 110.0
	c := latencyChart{Frame: newChart(a, plotH)}
	if p == nil || len(p.Seconds) == 0 {
		c.Empty = "no load was measured"
		return c
	}
	off := a.at(p.StartedAt)
	var top float64
	for _, s := range p.Seconds {
		top = math.Max(top, s.P99Ms)
	}
	yMax := niceMax(top)
	y := func(v float64) float64 { return c.PlotBot - plotH*math.Min(v, yMax)/yMax }
	for _, f := range []float64{0, 0.5, 1} {
		c.YTicks = append(c.YTicks, yTick{Y: y(f * yMax), Label: msLabel(f * yMax)})
	}
	line := func(get func(deployrec.Second) float64) string {
		var pb pathBuilder
		started := false
		for _, s := range p.Seconds {
			if s.Requests == 0 {
				started = false
				continue
			}
			x0, x1 := a.x(off+float64(s.Second)), a.x(off+float64(s.Second)+1)
			yy := y(get(s))
			if !started {
				pb.move(x0, yy)
				started = true
			} else {
				pb.line(x0, yy)
			}
			pb.line(x1, yy)
		}
		return pb.String()
	}
	c.P50 = line(func(s deployrec.Second) float64 { return s.P50Ms })
	c.P99 = line(func(s deployrec.Second) float64 { return s.P99Ms })
	return c
}

func msLabel(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1000:
		return fmt.Sprintf("%gs", math.Round(v/100)/10)
	case v < 1:
		return fmt.Sprintf("%gms", math.Round(v*100)/100)
	}
	return fmt.Sprintf("%gms", math.Round(v*10)/10)
}

// axisBounds is the time axis of d: from the first thing recorded to the
// last.
func axisBounds(d deployrec.Deploy) (time.Time, time.Time) {
	start, end := d.Start, d.End
	take := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if start.IsZero() || t.Before(start) {
			start = t
		}
		if t.After(end) {
			end = t
		}
	}
	for _, e := range d.Events {
		take(e.At)
	}
	if p := d.Probe; p != nil && !p.StartedAt.IsZero() {
		take(p.StartedAt)
		take(p.StartedAt.Add(time.Duration(len(p.Seconds)) * time.Second))
	}
	if end.Before(start) {
		end = start
	}
	return start, end
}

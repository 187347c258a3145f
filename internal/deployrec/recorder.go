package deployrec

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/probe"
)

// Recorder builds a Recording as a run goes: it is the deploy's Observer
// (Observe) and the prober's OnBucket sink (ProbeSecond). All methods are
// safe for concurrent use and cheap (an append under a mutex); a nil
// *Recorder records nothing, so callers need no checks.
type Recorder struct {
	clock clockwork.Clock

	mu  sync.Mutex
	rec Recording
	cur *Deploy // the deploy being recorded; nil between deploys
}

// New returns a Recorder for command (e.g. "mythex demo"). clock stamps the
// deploy's bounds; nil means the real clock.
func New(command string, clock clockwork.Clock) *Recorder {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	return &Recorder{clock: clock, rec: Recording{Format: FormatVersion, Command: command, CreatedAt: clock.Now()}}
}

// SetFleet records the fleet's config and evaluates its timing invariants.
// notes say anything else about it (a demo's time scale).
func (r *Recorder) SetFleet(cfg fleet.Config, notes ...string) {
	if r == nil {
		return
	}
	f, inv := FleetOf(cfg)
	f.Notes = append(f.Notes, notes...)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.Fleet, r.rec.Invariants = &f, inv
}

// BeginDeploy starts recording a deploy from → version over hosts; a deploy
// still open is ended first. For a measurement alone, version and hosts are
// empty.
func (r *Recorder) BeginDeploy(from, version string, hosts []string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeLocked()
	r.cur = &Deploy{From: from, Version: version, Hosts: slices.Clone(hosts), Start: r.clock.Now()}
}

// Event records one deploy event; Recorder is a deploy.Observer.
func (r *Recorder) Event(e deploy.Event) {
	if r == nil {
		return
	}
	if e.Target != nil {
		t := *e.Target // the event is the deploy's; keep our own copy
		e.Target = &t
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.openLocked()
	d.Events = append(d.Events, e)
	// A capacity wait is labelled with its whole batch ("web-1,web-2"),
	// which is no host of its own.
	batchLabel := e.Phase == deploy.PhaseCapacity && e.Kind != deploy.EventTarget
	if e.Host != "" && !batchLabel && !slices.Contains(d.Hosts, e.Host) {
		d.Hosts = append(d.Hosts, e.Host)
	}
}

var _ deploy.Observer = (*Recorder)(nil)

// Observe returns an Observer that records each event, then passes it to
// next (nil: none) — the deploy's renderer keeps working unchanged.
func (r *Recorder) Observe(next deploy.Observer) deploy.Observer {
	if r == nil {
		if next == nil {
			return deploy.ObserverFunc(func(deploy.Event) {})
		}
		return next
	}
	return deploy.ObserverFunc(func(e deploy.Event) {
		r.Event(e)
		if next != nil {
			next.Event(e)
		}
	})
}

// ProbeStarted notes that the prober started sending to url at rate
// requests per second; call it right before probe.Prober.Start. The exact
// start comes with ProbeStopped.
func (r *Recorder) ProbeStarted(url string, rate float64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.openLocked()
	d.Probe = &Probe{URL: url, Rate: rate, StartedAt: r.clock.Now(), Seconds: []Second{}}
}

// ProbeSecond records one second of the prober's run; pass it as
// probe.Deps.OnBucket (it is called once per second, in order).
func (r *Recorder) ProbeSecond(b probe.Bucket) {
	if r == nil {
		return
	}
	s := secondOf(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.openLocked()
	if d.Probe == nil {
		d.Probe = &Probe{StartedAt: r.clock.Now().Add(-time.Duration(b.Second+1) * time.Second)}
	}
	d.Probe.Seconds = append(d.Probe.Seconds, s)
}

// ProbeStopped records the prober's report: its exact start, and the
// totals the headline states. Seconds the OnBucket path did not deliver
// (none, when ProbeSecond was the sink) are taken from the report.
func (r *Recorder) ProbeStopped(rep probe.Report) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.openLocked()
	if d.Probe == nil {
		d.Probe = &Probe{}
	}
	p := d.Probe
	p.URL, p.Rate = rep.URL, rep.Rate
	if !rep.StartedAt.IsZero() {
		p.StartedAt = rep.StartedAt
	}
	for _, b := range rep.Buckets[min(len(p.Seconds), len(rep.Buckets)):] {
		p.Seconds = append(p.Seconds, secondOf(b))
	}
	p.Totals = totalsOf(rep)
	if end := p.StartedAt.Add(rep.Elapsed); end.After(d.End) {
		d.End = end
	}
}

// EndDeploy records the deploy's outcome; err is Run's error.
func (r *Recorder) EndDeploy(res deploy.Result, err error) {
	if r == nil {
		return
	}
	out := &Result{OK: err == nil && res.OK, Seconds: res.Seconds, Hosts: slices.Clone(res.Hosts), RolledBack: slices.Clone(res.RolledBack)}
	if err != nil {
		out.Error = err.Error()
	} else if !res.OK {
		out.Error = "the deploy did not finish"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.openLocked()
	d.Result = out
	if d.From == "" {
		d.From = commonPrevious(res.Hosts)
	}
}

// commonPrevious is the version every host ran before, or "" when they
// differed or none is known.
func commonPrevious(hosts []deploy.HostResult) string {
	v := ""
	for _, h := range hosts {
		switch {
		case h.PreviousVersion == "":
			return ""
		case v == "":
			v = h.PreviousVersion
		case v != h.PreviousVersion:
			return ""
		}
	}
	return v
}

// Close ends the deploy being recorded, if any.
func (r *Recorder) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closeLocked()
}

// Recording returns a copy of everything recorded so far; a deploy still
// open is included, ending now.
func (r *Recorder) Recording() Recording {
	if r == nil {
		return Recording{Format: FormatVersion}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.rec
	out.Deploys = slices.Clone(r.rec.Deploys)
	if r.cur != nil {
		d := *r.cur
		if now := r.clock.Now(); now.After(d.End) {
			d.End = now
		}
		out.Deploys = append(out.Deploys, d)
	}
	for i := range out.Deploys {
		out.Deploys[i] = out.Deploys[i].clone()
	}
	return out
}

// openLocked returns the deploy being recorded, opening one when none is.
// Callers hold mu.
func (r *Recorder) openLocked() *Deploy {
	if r.cur == nil {
		r.cur = &Deploy{Start: r.clock.Now()}
	}
	return r.cur
}

// closeLocked moves the open deploy into the recording. Callers hold mu.
func (r *Recorder) closeLocked() {
	if r.cur == nil {
		return
	}
	if now := r.clock.Now(); now.After(r.cur.End) {
		r.cur.End = now
	}
	r.rec.Deploys = append(r.rec.Deploys, *r.cur)
	r.cur = nil
}

// clone copies d deeply enough that the Recorder's later appends do not
// show through.
func (d Deploy) clone() Deploy {
	d.Hosts = slices.Clone(d.Hosts)
	d.Events = slices.Clone(d.Events)
	if d.Result != nil {
		res := *d.Result
		res.Hosts = slices.Clone(res.Hosts)
		res.RolledBack = slices.Clone(res.RolledBack)
		d.Result = &res
	}
	if d.Probe != nil {
		p := *d.Probe
		p.Seconds = slices.Clone(p.Seconds)
		if p.Totals != nil {
			t := *p.Totals
			p.Totals = &t
		}
		d.Probe = &p
	}
	return d
}

func secondOf(b probe.Bucket) Second {
	s := Second{
		Second: b.Second,
		Counts: Counts{Requests: b.Requests, OK: b.OK, DrainSignals: b.DrainSignals, AppErrors: b.AppErrors,
			ReachedNothing: b.ReachedNothing, ProbeErrors: b.ProbeErrors, LateSends: b.LateSends, Unsent: b.Unsent},
		P50Ms: ms(b.P50Latency), P99Ms: ms(b.P99Latency), MaxMs: ms(b.MaxLatency),
	}
	if len(b.Versions) > 0 {
		s.Versions = maps.Clone(b.Versions)
	}
	return s
}

func totalsOf(rep probe.Report) *Totals {
	t := &Totals{
		Counts: Counts{Requests: rep.Requests, OK: rep.OK, DrainSignals: rep.DrainSignals, AppErrors: rep.AppErrors,
			ReachedNothing: rep.ReachedNothing, ProbeErrors: rep.ProbeErrors, LateSends: rep.LateSends, Unsent: rep.Unsent},
		P50Ms: ms(rep.Latency.P50), P99Ms: ms(rep.Latency.P99), MaxMs: ms(rep.Latency.Max),
	}
	for _, rc := range rep.Reasons {
		what := rc.Reason.String()
		switch {
		case rc.Detail != "":
			what += " " + rc.Detail
		case rc.Status != 0:
			what += fmt.Sprintf(" %d", rc.Status)
		}
		t.Reasons = append(t.Reasons, Reason{Class: rc.Class.String(), What: what, Count: rc.Count})
	}
	return t
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

package demo

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mythex/mythex/examples/seed"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/fleetstatus"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/probe"
	"github.com/mythex/mythex/internal/termui"
	"github.com/mythex/mythex/internal/timing"
)

// Profiles: which of the write-up's fleets the demo runs.
const (
	// ProfileAfter is examples/seed/after.yml: the fixed numbers (check
	// every 5s, 2 failures, drain 15s) and a deregister-and-flip drain.
	ProfileAfter = "after"
	// ProfileBefore is examples/seed/before.yml: the broken numbers (check
	// every 30s, drain 5s, health flip only). Requests reach nothing.
	ProfileBefore = "before"
)

// DefaultTimeScale is the time scale of each profile that ends the demo in
// well under a minute on a laptop.
var DefaultTimeScale = map[string]float64{ProfileAfter: 0.2, ProfileBefore: 0.05}

// Options configure a demo run.
type Options struct {
	// Profile is ProfileAfter (default) or ProfileBefore.
	Profile string
	// TimeScale multiplies every duration of the profile (0.2: a 15s drain
	// lasts 3s). Default DefaultTimeScale[Profile].
	TimeScale float64
	// Hosts is the number of hosts. Default 3.
	Hosts int
	// Rate is the prober's load in requests per second. Default 200.
	Rate float64
	// ProbeTimeout bounds each of the prober's requests: one unanswered
	// for this long counts as reached nothing (a timeout). Default 2 s.
	// (Tests on a loaded machine give it more, so that only a request the
	// fleet really dropped counts.)
	ProbeTimeout time.Duration
	// Deploys is the number of deploys under load after the first rollout.
	// Default 1.
	Deploys int
	// Exe is the mythex binary. Default: os.Executable().
	Exe string
	// AppExe is FleetOptions.AppExe: a binary of the sample app alone to
	// run the services. Default: Exe, as `mythex sample-app`.
	AppExe string
	// Dir is where the fleet writes; default a new temporary directory,
	// removed at the end unless Keep.
	Dir string
	// Keep leaves Dir behind (logs, state) for inspection.
	Keep bool
	// Out receives progress for people; nil for none.
	Out io.Writer
	// Mode is how deploy progress is drawn on Out.
	Mode termui.Mode
	// Logger receives the load balancer's state changes. Default: discarded.
	Logger *slog.Logger
	// Runtime runs the services: RuntimeProcess (default) or RuntimeDocker
	// (containers on the local Docker engine; Exe must be statically
	// linked).
	Runtime string
	// LB is the load balancer: LBEmbedded (default), LBHAProxy, or LBALB
	// (the embedded LB driven through the alb driver and its ELBv2 endpoint).
	LB string
	// Adjust, when set, changes the scaled profile before the fleet starts
	// (tests widen a timeout for a loaded machine).
	Adjust func(*fleet.Config)
	// Recorder, when set, records every deploy under load as it runs (phase
	// and LB target events, the prober's seconds) for a report. Optional.
	Recorder *deployrec.Recorder
	// Fault, when set, names one of Faults to inject into the deploy under
	// load (process runtime only); the demo then reports how mythex handled
	// it. Deploys is 1.
	Fault string
}

// VersionSpan is a stretch of the run in which the same versions answered.
type VersionSpan struct {
	FromSecond int      `json:"from_second"`
	ToSecond   int      `json:"to_second"`
	Versions   []string `json:"versions"`
}

// ProbeSummary is what the load saw during one deploy.
type ProbeSummary struct {
	Requests       int64   `json:"requests"`
	ReachedNothing int64   `json:"reached_nothing"`
	AppErrors      int64   `json:"app_errors"`
	DrainSignals   int64   `json:"drain_signals"`
	OK             int64   `json:"ok"`
	LateSends      int64   `json:"late_sends"`
	Unsent         int64   `json:"unsent"`
	P99Millis      float64 `json:"p99_ms"`
	MaxMillis      float64 `json:"max_ms"`
	// Reasons break down every request that was not ok, by class and reason
	// (refused, timeout, lb 503 no-targets …), most frequent first.
	Reasons []ReasonCount `json:"reasons,omitempty"`
}

// ReasonCount is how many requests ended one way.
type ReasonCount struct {
	Class string `json:"class"`
	What  string `json:"what"`
	Count int64  `json:"count"`
}

// DeployReport is one deploy under load.
type DeployReport struct {
	From     string              `json:"from"`
	Version  string              `json:"version"`
	OK       bool                `json:"ok"`
	Error    string              `json:"error,omitempty"`
	Seconds  float64             `json:"seconds"`
	Hosts    []deploy.HostResult `json:"hosts"`
	Bound    timing.Bound        `json:"bound"`
	Probe    ProbeSummary        `json:"probe"`
	Versions []VersionSpan       `json:"versions"`
	// LBCalls is how many ELBv2 API calls the deploy made (--lb alb).
	LBCalls int64 `json:"lb_calls,omitempty"`
	// Fault is what a fault run found; nil without one.
	Fault *FaultReport `json:"fault_report,omitempty"`
}

// Summary is the whole demo, as `mythex demo --json` prints it.
type Summary struct {
	Profile        string         `json:"profile"`
	LB             string         `json:"lb,omitempty"`
	TimeScale      float64        `json:"time_scale"`
	Hosts          int            `json:"hosts"`
	Rate           float64        `json:"rate"`
	Requests       int64          `json:"requests"`
	ReachedNothing int64          `json:"reached_nothing"`
	AppErrors      int64          `json:"app_errors"`
	DrainSignals   int64          `json:"drain_signals"`
	Deploys        []DeployReport `json:"deploys"`
	// Fault is the fault run (Options.Fault), with what it found; nil
	// without one. Its fields are also at the top level of the JSON.
	*FaultReport
	// AgentRSSMB is each agent's resident memory at the end, in MB.
	AgentRSSMB map[string]float64 `json:"agent_rss_mb,omitempty"`
	// Status is what `mythex status` said of the fleet at the end; nil when
	// the demo stopped before.
	Status *fleetstatus.Verdict `json:"status,omitempty"`
	Dir    string               `json:"dir,omitempty"`
}

// OK reports whether every deploy succeeded and no request reached nothing
// — or, with a fault, whether mythex handled it (FaultReport.OK).
func (s Summary) OK() bool {
	if s.FaultReport != nil {
		return s.FaultReport.OK()
	}
	for _, d := range s.Deploys {
		if !d.OK {
			return false
		}
	}
	return len(s.Deploys) > 0 && s.ReachedNothing == 0
}

// SuiteCheckTimeout is the LB's health check timeout the end-to-end tests
// use: the after profile's 2s scaled by 0.1 is 0.2s, too short for a
// race-enabled suite on two busy cores; 0.4s keeps every invariant at that
// scale (drain 1.5s > 2 × 0.5s + 0.4s).
const SuiteCheckTimeout = 400 * time.Millisecond

// SuiteConfig is the fleet config of end-to-end tests: the after profile
// scaled by scale (0.1: ten times faster than the write-up's numbers) with
// the health check timeout SuiteCheckTimeout.
func SuiteConfig(scale float64) (fleet.Config, error) {
	cfg, err := ProfileConfig(ProfileAfter, scale)
	if err != nil {
		return fleet.Config{}, err
	}
	cfg.LoadBalancer.HealthCheck.Timeout = SuiteCheckTimeout
	return cfg, nil
}

// ProfileConfig returns the profile's fleet config, scaled by scale.
func ProfileConfig(profile string, scale float64) (fleet.Config, error) {
	var src []byte
	switch profile {
	case ProfileAfter, "":
		src = seed.After
	case ProfileBefore:
		src = seed.Before
	default:
		return fleet.Config{}, fmt.Errorf("%w: unknown profile %q; use after or before", fleet.ErrInvalid, profile)
	}
	l, err := fleet.Parse("examples/seed/"+profile+".yml", src)
	if err != nil {
		return fleet.Config{}, err
	}
	if scale <= 0 || scale > 10 {
		return fleet.Config{}, fmt.Errorf("%w: time scale %v must be more than 0 and at most 10", fleet.ErrInvalid, scale)
	}
	return l.Config.Scaled(scale), nil
}

// Run runs the demo: it starts the fleet, rolls out v1, then deploys v2 (and
// more with Deploys) under the prober's load, and reports. Ctrl-C (ctx) stops
// it and every process it started. The error is for a demo that could not
// run; deploy failures and dropped requests are in the Summary.
func Run(ctx context.Context, o Options) (sum Summary, err error) {
	if o.Profile == "" {
		o.Profile = ProfileAfter
	}
	if o.TimeScale == 0 {
		o.TimeScale = DefaultTimeScale[o.Profile]
	}
	if o.Hosts == 0 {
		o.Hosts = 3
	}
	if o.Rate == 0 {
		o.Rate = 200
	}
	if o.Deploys == 0 {
		o.Deploys = 1
	}
	var fault *Fault
	if o.Fault != "" {
		fl, ok := Faults[o.Fault]
		if !ok {
			return sum, fmt.Errorf("%w: unknown fault %q; use one of %s", fleet.ErrInvalid, o.Fault, strings.Join(FaultNames(), ", "))
		}
		if o.Runtime == RuntimeDocker {
			return sum, fmt.Errorf("%w: --fault runs on the process runtime only", fleet.ErrInvalid)
		}
		fault, o.Deploys = &fl, 1
	}
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	cfg, err := ProfileConfig(o.Profile, o.TimeScale)
	if err != nil {
		return sum, err
	}
	if o.Adjust != nil {
		o.Adjust(&cfg)
	}
	if o.Hosts < 1 || o.Hosts > 20 {
		return sum, fmt.Errorf("%w: --hosts %d must be between 1 and 20", fleet.ErrInvalid, o.Hosts)
	}
	if o.Rate <= 0 || o.Rate > 20000 {
		return sum, fmt.Errorf("%w: --rate %v must be more than 0 and at most 20000", fleet.ErrInvalid, o.Rate)
	}
	if o.Exe == "" {
		if o.Exe, err = os.Executable(); err != nil {
			return sum, err
		}
	}
	if o.Dir == "" {
		if o.Dir, err = os.MkdirTemp("", "mythex-demo-"); err != nil {
			return sum, err
		}
		if !o.Keep {
			defer os.RemoveAll(o.Dir)
		}
	}
	sum = Summary{Profile: o.Profile, LB: o.LB, TimeScale: o.TimeScale, Hosts: o.Hosts, Rate: o.Rate}
	if o.Keep {
		sum.Dir = o.Dir
	}
	if o.Runtime == "" {
		o.Runtime = RuntimeProcess
	}
	what := "processes"
	if o.Runtime == RuntimeDocker {
		what = "containers"
	}
	fmt.Fprintf(out, "mythex demo: profile %s (%s), time scale %g, %d hosts × 4 services (%s), %g req/s\n",
		o.Profile, profileWords(o.Profile), o.TimeScale, o.Hosts, what, o.Rate)
	hc := cfg.LoadBalancer.HealthCheck
	fmt.Fprintf(out, "  health check every %v, unhealthy after %d, drain serves %v, drain mode %s\n",
		hc.Interval, hc.UnhealthyThreshold, cfg.Drain.ServePeriod, cfg.Deploy.DrainMode)

	f, err := StartFleet(ctx, FleetOptions{Config: cfg, Hosts: o.Hosts, Exe: o.Exe, AppExe: o.AppExe, Dir: o.Dir, Logger: o.Logger, Runtime: o.Runtime, LB: o.LB,
		LBPoll: time.Duration(float64(lbport.DefaultPollInterval) * o.TimeScale)})
	if err != nil {
		return sum, err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	fmt.Fprintf(out, "  load balancer %s; agents %s (state and logs in %s)\n", f.URL(), hostList(f), o.Dir)
	o.Recorder.SetFleet(f.Loaded.Config, fmt.Sprintf("demo profile %s at time scale %g (every duration × %g)", o.Profile, o.TimeScale, o.TimeScale))

	begin := time.Now()
	res, err := f.FirstRollout(ctx, "v1")
	if ctx.Err() != nil {
		return sum, fmt.Errorf("interrupted during the first rollout: %w", ctx.Err())
	}
	if err != nil {
		return sum, fmt.Errorf("first rollout of v1 failed: %w\nlast lines of the agent's log:\n%s", err, f.LogTail(firstFailed(res), 2000))
	}
	fmt.Fprintf(out, "rolled out v1 to %d hosts in %.1fs (no load yet)\n", o.Hosts, time.Since(begin).Seconds())

	from := "v1"
	for i := range o.Deploys {
		version := fmt.Sprintf("v%d", i+2)
		rep, err := DeployUnderLoad(ctx, f, o, from, version, fault)
		if err != nil {
			return sum, err
		}
		if fault != nil {
			sum.FaultReport = rep.Fault
		}
		sum.Deploys = append(sum.Deploys, rep)
		sum.Requests += rep.Probe.Requests
		sum.ReachedNothing += rep.Probe.ReachedNothing
		sum.AppErrors += rep.Probe.AppErrors
		sum.DrainSignals += rep.Probe.DrainSignals
		if !rep.OK {
			break
		}
		from = version
	}
	sum.AgentRSSMB = map[string]float64{}
	for h, b := range f.AgentRSS() {
		sum.AgentRSSMB[h] = float64(b) / (1 << 20)
	}
	st := f.Status(ctx)
	sum.Status = &st
	return sum, nil
}

// DeployUnderLoad runs one deploy of version (from the version the fleet runs)
// on f while the prober sends o.Rate requests per second (o.ProbeTimeout each,
// 2 s when zero) through the load balancer, from before the deploy until a
// tail after. With a fault (nil for none), the fault is injected, the fleet's
// final state awaited under the same load, and judged. Run calls it for each
// deploy; the end-to-end tests call it on fleets of their own. Errors are for
// a deploy that could not be measured (the prober could not start, ctx
// ended); a failed deploy and dropped requests are in the report.
func DeployUnderLoad(ctx context.Context, f *Fleet, o Options, from, version string, fault *Fault) (DeployReport, error) {
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	rep := DeployReport{From: from, Version: version}
	rec := o.Recorder // nil records nothing
	deps := probe.Deps{}
	if rec != nil {
		deps.OnBucket = rec.ProbeSecond
	}
	p, err := probe.New(probe.Config{URL: f.URL(), Rate: o.Rate, Timeout: cmp.Or(o.ProbeTimeout, 2*time.Second)}, deps)
	if err != nil {
		return rep, err
	}
	rec.BeginDeploy(from, version, hostNames(f))
	rec.ProbeStarted(f.URL(), o.Rate)
	if err := p.Start(ctx); err != nil {
		return rep, err
	}
	stopped := false
	defer func() {
		if !stopped {
			p.Stop()
		}
	}()
	cfg := &f.Loaded.Config
	hc := cfg.LoadBalancer.HealthCheck
	lead := max(hc.Interval, 500*time.Millisecond)
	sleepCtx(ctx, lead)
	var vars map[string]string
	if fault != nil {
		fmt.Fprintf(out, "\nfault %s: %s\n  expected: %s\n", fault.Name, fault.What, fault.Expect)
		if fault.Before != nil {
			if err := fault.Before(ctx, f); err != nil {
				return rep, fmt.Errorf("fault %s: %w", fault.Name, err)
			}
		}
		if fault.Vars != nil {
			vars = fault.Vars(cfg)
		}
	}
	fmt.Fprintf(out, "\ndeploy %s → %s under %g req/s\n", from, version, o.Rate)
	r := termui.NewDeployRenderer(out, o.Mode)
	// Which hosts the new version was started on, from the events (a
	// killed deployer leaves no result).
	var reachedMu sync.Mutex
	var reachedHosts []string
	obs := deploy.ObserverFunc(func(e deploy.Event) {
		rec.Event(e)
		r.Event(e)
		if e.Phase == deploy.PhaseStart && e.Kind == deploy.EventBegin {
			reachedMu.Lock()
			if !slices.Contains(reachedHosts, e.Host) {
				reachedHosts = append(reachedHosts, e.Host)
			}
			reachedMu.Unlock()
		}
		if fault != nil && fault.During != nil {
			fault.During(ctx, f, e)
		}
	})
	var res deploy.Result
	var derr error
	if fault != nil && fault.Deploy != nil {
		res, derr = fault.Deploy(ctx, f, o.Exe, version, obs)
	} else {
		res, derr = f.Deploy(ctx, version, vars, obs)
	}
	r.Close()
	rec.EndDeploy(res, derr)
	// A tail as long as the LB needs to notice anything the deploy left
	// behind, so no drop after the deploy goes unseen.
	sleepCtx(ctx, hc.Interval*time.Duration(hc.UnhealthyThreshold)+hc.Timeout)
	if fault != nil {
		fr, err := judgeFault(ctx, f, o, fault, from, version, out)
		if err != nil {
			return rep, err
		}
		reachedMu.Lock()
		fr.HostsReached = slices.Clone(reachedHosts)
		reachedMu.Unlock()
		rep.Fault = fr
	}
	report := p.Stop()
	stopped = true
	rec.ProbeStopped(report)
	rec.Close()
	rep.OK, rep.Hosts, rep.Seconds, rep.Bound = derr == nil, res.Hosts, res.Seconds, res.Bound
	rep.LBCalls = f.LBCalls
	if derr != nil {
		rep.Error = derr.Error()
	}
	rep.Probe = ProbeSummary{
		Requests: report.Requests, ReachedNothing: report.ReachedNothing, AppErrors: report.AppErrors,
		DrainSignals: report.DrainSignals, OK: report.OK, LateSends: report.LateSends, Unsent: report.Unsent,
		P99Millis: ms(report.Latency.P99), MaxMillis: ms(report.Latency.Max),
	}
	if rep.Fault != nil {
		rep.Fault.ReachedNothing = report.ReachedNothing
		rep.Fault.ReachedNothingBound = fault.Bound(cfg, o.Rate, len(f.Loaded.Hosts), report.NewConns)
		// Rolled back: the new version reached hosts, and the fleet ended on
		// the old one (by the deploy's rollback or the agents' recovery).
		rep.Fault.RolledBack = len(rep.Fault.HostsReached) > 0 && rep.Fault.FleetVersionAfter == from
	}
	rep.Versions = spans(report.Buckets)
	for _, r := range report.Reasons {
		what := r.Reason.String()
		if r.Detail != "" {
			what += " " + r.Detail
		} else if r.Status != 0 {
			what += fmt.Sprintf(" %d", r.Status)
		}
		rep.Probe.Reasons = append(rep.Probe.Reasons, ReasonCount{Class: r.Class.String(), What: what, Count: r.Count})
	}
	slices.SortFunc(rep.Probe.Reasons, func(a, b ReasonCount) int { return int(b.Count - a.Count) })
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	return rep, nil
}

// judgeFault repairs what the fault broke outside mythex's hands and waits,
// under the same load, for the fleet's final state.
func judgeFault(ctx context.Context, f *Fleet, o Options, fault *Fault, from, version string, out io.Writer) (*FaultReport, error) {
	cfg := &f.Loaded.Config
	fr := &FaultReport{Fault: fault.Name, WantVersion: from}
	if fault.NewVersionWins {
		fr.WantVersion = version
	}
	if fault.After != nil {
		if err := fault.After(ctx, f); err != nil {
			return nil, fmt.Errorf("fault %s: repair: %w", fault.Name, err)
		}
	}
	// A fault's goroutine (the LB restart, the agent kill) may still be
	// running: wait for it, which also orders its results before the reads
	// below (they were a data race under -race).
	f.restartOnce.Do(func() {})
	f.agentKillOnce.Do(func() {})
	if f.RestartErr != nil {
		return nil, fmt.Errorf("fault %s: %w", fault.Name, f.RestartErr)
	}
	if f.AgentKillErr != nil {
		return nil, fmt.Errorf("fault %s: %w", fault.Name, f.AgentKillErr)
	}
	if f.RestartTook > 0 {
		fmt.Fprintf(out, "the load balancer was restarted: its admin API was down for %.2fs\n", f.RestartTook.Seconds())
	}
	if n := f.DrainsReapplied.Load(); n > 0 {
		fmt.Fprintf(out, "HAProxy lost %d drain(s) on the reload; the deploy's next poll set them again\n", n)
	}
	limit := 4 * healthyWait(cfg)
	if fault.Settle != nil {
		limit = fault.Settle(cfg)
	}
	fmt.Fprintf(out, "waiting (at most %v) for the fleet to settle: one version everywhere, last known good, verified, healthy and in rotation\n", limit.Round(time.Millisecond))
	begin := time.Now()
	fr.FleetVersionAfter, fr.Unsettled = f.Settle(ctx, limit)
	if fault.AnyVersion && fr.FleetVersionAfter != "" {
		fr.WantVersion = fr.FleetVersionAfter
	}
	if fr.Unsettled == "" {
		fmt.Fprintf(out, "fleet settled on %s after %.1fs\n", fr.FleetVersionAfter, time.Since(begin).Seconds())
	} else {
		fmt.Fprintf(out, "fleet did NOT settle within %v: %s\n", limit, fr.Unsettled)
	}
	return fr, nil
}

// spans compresses per-second version counts into stretches of the same set.
func spans(buckets []probe.Bucket) []VersionSpan {
	var out []VersionSpan
	for _, b := range buckets {
		var vs []string
		for v, n := range b.Versions {
			if n > 0 && v != "" {
				vs = append(vs, v)
			}
		}
		slices.Sort(vs)
		if len(out) > 0 && slices.Equal(out[len(out)-1].Versions, vs) {
			out[len(out)-1].ToSecond = b.Second
			continue
		}
		out = append(out, VersionSpan{FromSecond: b.Second, ToSecond: b.Second, Versions: vs})
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func profileWords(p string) string {
	if p == ProfileBefore {
		return "the write-up's numbers before the fixes: requests will reach nothing"
	}
	return "the write-up's numbers after the fixes"
}

func hostNames(f *Fleet) []string {
	var s []string
	for _, h := range f.Loaded.Hosts {
		s = append(s, h.Name)
	}
	return s
}

func hostList(f *Fleet) string {
	var s []string
	for _, h := range f.Loaded.Hosts {
		s = append(s, h.Name)
	}
	return strings.Join(s, ", ")
}

func firstFailed(res deploy.Result) string {
	for _, h := range res.Hosts {
		if !h.OK {
			return h.Host
		}
	}
	return "web-1"
}

package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/timing"
)

// Errors Run returns (wrapped) besides a *StepError.
var (
	// ErrPreflight: a check before any host was touched failed (agent or LB
	// unreachable, wrong token, no definition); nothing was changed.
	ErrPreflight = errors.New("deploy preflight failed")
	// ErrInProgress: another deploy holds the fleet lease; nothing was changed.
	ErrInProgress = errors.New("another deploy is in progress")
	// ErrSweep: every host deployed, but the final verification of the whole
	// fleet failed.
	ErrSweep = errors.New("final verification failed")
	// ErrRecheck: a host already deployed failed when looked at again before
	// the next batch.
	ErrRecheck = errors.New("a deployed host failed its recheck")
	// ErrFleetRolledBack: the deploy failed after it had moved hosts, and
	// every moved host was returned to its previous version and verified.
	ErrFleetRolledBack = errors.New("fleet rolled back")
	// ErrFleetRollbackFailed: the deploy failed after it had moved hosts and
	// at least one of them could not be returned to its previous version.
	ErrFleetRollbackFailed = errors.New("FLEET ROLLBACK FAILED")
)

// StepError says which host failed at which phase and why, and whether the
// host was rolled back.
type StepError struct {
	Host  string
	Phase Phase
	Err   error
	// RolledBack is true when the host was returned to its previous
	// definition and verified on it.
	RolledBack bool
	// RollbackErr is why the rollback itself failed, if it did.
	RollbackErr error
}

func (e *StepError) Error() string {
	s := fmt.Sprintf("host %s failed at %s: %v", e.Host, e.Phase, e.Err)
	switch {
	case e.RolledBack:
		s += "; rolled back to its previous version and verified"
	case errors.Is(e.RollbackErr, ErrLeaseLost):
		s += fmt.Sprintf("; not rolled back by this deploy (%v): the agent's own recovery returns it to its last good version", e.RollbackErr)
	case e.RollbackErr != nil:
		s += fmt.Sprintf("; ROLLBACK FAILED: %v", e.RollbackErr)
	}
	return s
}

func (e *StepError) Unwrap() error { return e.Err }

// Host is one host to deploy to.
type Host struct {
	// Name is the host's name.
	Name string
	// Target is the host:port the load balancer routes to.
	Target string
	// Ref is the host's target in the load balancer. Default: id Name,
	// address Target (the embedded LB's naming).
	Ref lbport.TargetRef
	// Agent is the host's agent.
	Agent Agent
	// Definition is the canonical JSON of the definition to publish to this host.
	Definition []byte
	// Local is true when the agent runs on this machine (a loopback
	// address): the preflight then checks the host's executables, images
	// and ports itself before anything changes.
	Local bool
}

// Options configure one deploy.
type Options struct {
	// Config holds the timings (health check, drain, deploy) the deploy waits on.
	Config *fleet.Config
	// Version is the version being deployed; every verified service must run it.
	Version string
	// Holder names the deploy in leases, e.g. "deploy v2 by alice".
	Holder string
	// Hosts in deploy order.
	Hosts []Host
	// LB drives the load balancer. After a target reads unused the deploy
	// waits Config.LoadBalancer.PropagationMargin more (the propagation grace).
	LB lbport.Driver
	// Front sends requests through the load balancer for verification.
	Front Front
	// Verify lists the services checked on every host; empty means every
	// service of the definition.
	Verify []string
	// TargetServices are the services the load balancer routes to (drained by
	// SIGTERM in health mode), e.g. ["gateway"]. Default
	// Config.Deploy.TargetServices.
	TargetServices []string
	// Clock measures phases and paces polling. Default: the real clock.
	Clock clockwork.Clock
	// Observer receives progress events. Optional.
	Observer Observer
	// Poll is the LB polling interval. Default: a tenth of the health check
	// interval, between 5ms and 100ms.
	Poll time.Duration
	// RetryFor bounds the retries of one LB or agent call that fails
	// transiently (refused, reset, unavailable), counted from its first
	// failure. Default 10s, or 3 health check intervals if longer.
	RetryFor time.Duration
	// ImageExists, when set, says whether the local Docker engine has an
	// image (nil error) — the preflight asks it for every service of a
	// local host on the Docker runtime.
	ImageExists func(ctx context.Context, image string) error
	// AllowDowntime lets a batch take every host out of rotation at once (a
	// single host, or batch_size ≥ hosts). Without it New refuses such a
	// deploy: the load balancer would have no target for a whole batch.
	AllowDowntime bool
}

// PhaseTime is how long one phase of one host took.
type PhaseTime struct {
	Phase   Phase   `json:"phase"`
	Seconds float64 `json:"seconds"`
}

// HostResult is the outcome of one host.
type HostResult struct {
	Host       string      `json:"host"`
	OK         bool        `json:"ok"`
	RolledBack bool        `json:"rolled_back,omitempty"`
	Failed     Phase       `json:"failed_phase,omitempty"`
	Error      string      `json:"error,omitempty"`
	Phases     []PhaseTime `json:"phases"`
	// Seconds is the host's deploy, lease to verified (the release after
	// the fleet's sweep is not counted).
	Seconds float64 `json:"seconds"`
	// BoundSeconds is the analytic lower bound (see timing.Bound).
	BoundSeconds float64 `json:"bound_seconds"`
	// Killed names services that outlived their grace period and were killed.
	Killed []string `json:"killed,omitempty"`
	// PreviousVersion is what the host ran before.
	PreviousVersion string `json:"previous_version,omitempty"`
}

// Result is the outcome of a deploy.
type Result struct {
	OK      bool         `json:"ok"`
	Version string       `json:"version"`
	Hosts   []HostResult `json:"hosts"`
	Seconds float64      `json:"seconds"`
	Bound   timing.Bound `json:"bound"`
	// RolledBack names the hosts returned to their previous version by a
	// fleet rollback (the failed host's own rollback is in its HostResult).
	RolledBack []string `json:"rolled_back,omitempty"`
}

// Deployer runs one rolling deploy. Create it with New; run it once.
type Deployer struct {
	o        Options
	clock    clockwork.Clock
	obs      *serialObserver
	bound    timing.Bound
	required int
	lb       *lbView
	// poller watches targets: one Describe call per poll for every host
	// being waited on.
	poller *lbport.Poller

	// states is every host's state, in deploy order (set by preflight).
	states []*hostState

	mu          sync.Mutex
	fleetLeases []*lease

	// targets tracks what the LB last reported of each target (EventTarget).
	targets targetWatch
}

// New checks opts and returns a Deployer. It returns an error wrapping
// ErrPreflight when an option is missing.
func New(opts Options) (*Deployer, error) {
	var probs []string
	if opts.Config == nil {
		probs = append(probs, "no fleet config")
	}
	if opts.Version == "" {
		probs = append(probs, "no version: give --version")
	}
	if len(opts.Hosts) == 0 {
		probs = append(probs, "no hosts in the fleet config")
	}
	if opts.LB == nil || opts.Front == nil {
		probs = append(probs, "no load balancer to hand off traffic with")
	}
	seen := map[string]bool{}
	for _, h := range opts.Hosts {
		if h.Agent == nil {
			probs = append(probs, fmt.Sprintf("host %s has no agent address (hosts[].agent)", h.Name))
		}
		if len(h.Definition) == 0 {
			probs = append(probs, fmt.Sprintf("host %s has no definition to publish", h.Name))
		}
		if seen[h.Name] {
			probs = append(probs, fmt.Sprintf("host %s is listed twice", h.Name))
		}
		seen[h.Name] = true
	}
	required := 1
	if opts.Config != nil {
		var err error
		if required, err = opts.Config.Deploy.InService(len(opts.Hosts)); err != nil {
			probs = append(probs, err.Error())
		}
	}
	if n := len(opts.Hosts); opts.Config != nil && n > 0 && !opts.AllowDowntime {
		if b := max(opts.Config.Deploy.BatchSize, 1); n-b < 1 {
			probs = append(probs, fmt.Sprintf("a batch of %d takes all %d host(s) out of rotation at once, so every request would reach nothing for a whole batch; "+
				"lower deploy.batch_size, add a host, or accept the downtime with --allow-downtime", b, n))
		} else if !fleet.CapacityHolds(n-b, required) {
			probs = append(probs, fmt.Sprintf("a batch of %d leaves %d of %d host(s) serving, fewer than deploy.min_in_service (%d): every batch would be refused; lower deploy.batch_size or deploy.min_in_service",
				b, n-b, n, required))
		}
	}
	if opts.AllowDowntime {
		required = 0
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrPreflight, strings.Join(probs, "; "))
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	if opts.Poll <= 0 {
		opts.Poll = min(max(opts.Config.LoadBalancer.HealthCheck.Interval/10, 5*time.Millisecond), 100*time.Millisecond)
	}
	if opts.RetryFor <= 0 {
		opts.RetryFor = max(10*time.Second, 3*opts.Config.LoadBalancer.HealthCheck.Interval)
	}
	if opts.Holder == "" {
		opts.Holder = "deploy " + opts.Version
	}
	if len(opts.TargetServices) == 0 {
		opts.TargetServices = opts.Config.Deploy.TargetServices
	}
	view := newLBView(opts.LB, opts.Config.LoadBalancer.PropagationMargin, opts.Clock)
	return &Deployer{o: opts, clock: opts.Clock, obs: &serialObserver{o: opts.Observer}, bound: timing.LowerBound(opts.Config), required: required,
		lb: view, poller: lbport.NewPoller(view, opts.Clock, opts.Poll)}, nil
}

func (d *Deployer) emit(host string, p Phase, k EventKind, elapsed time.Duration, detail string) {
	d.obs.Event(Event{At: d.clock.Now(), Host: host, Phase: p, Kind: k, Elapsed: elapsed.Seconds(), Detail: detail})
}

// sawTarget emits an EventTarget when a poll during phase p found host's
// target in a state other than the one last seen.
func (d *Deployer) sawTarget(host string, p Phase, t lbport.Target) {
	s := targetStateOf(t)
	if d.targets.changed(host, s) {
		d.obs.Event(Event{At: d.clock.Now(), Host: host, Phase: p, Kind: EventTarget, Target: &s})
	}
}

// Run deploys to every host in batches of deploy.batch_size. Before each
// batch it looks again at every host already deployed and asks the LB for
// capacity; after the last batch it verifies the whole fleet. Only then is
// the new version recorded as every host's last known good. When a host
// fails after another was moved, or a recheck or the sweep fails, every
// moved host is rolled back, batch by batch, with the same handshake.
// Errors: ErrPreflight, ErrInProgress or ErrCapacity with nothing changed;
// else a *StepError, ErrRecheck, ErrSweep or ErrCapacity joined with
// ErrFleetRolledBack or ErrFleetRollbackFailed when hosts had moved. The
// Result is filled in every case.
func (d *Deployer) Run(ctx context.Context) (res Result, err error) {
	start := d.clock.Now()
	res = Result{Version: d.o.Version, Bound: d.bound}
	defer func() {
		res.Seconds = d.clock.Since(start).Seconds()
		for _, st := range d.states {
			if st.res != nil {
				res.Hosts = append(res.Hosts, *st.res)
			}
		}
	}()

	states, err := d.preflight(ctx)
	if err != nil {
		return res, err
	}
	d.states = states
	// Lost leases cancel the run (fleet) or the host (host lease); the
	// cause says which.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	release, err := d.fleetLease(ctx, cancel)
	if err != nil {
		return res, err
	}
	defer release()
	// A deploy that lost a lease stops renewing the host leases without
	// releasing them: they lapse, and each agent's recovery returns its host
	// to its last good version — the one thing a deploy whose fence is gone
	// must not do itself.
	defer func() { d.releaseHostLeases(!errors.Is(err, ErrLeaseLost)) }()

	batch := max(d.o.Config.Deploy.BatchSize, 1)
	var moved []*hostState
	for i := 0; i < len(states); i += batch {
		group := states[i:min(i+batch, len(states))]
		if err := d.fenceFleet(ctx); err != nil {
			return res, d.abandon(err, moved)
		}
		if len(moved) > 0 {
			if err := d.recheck(ctx, moved); err != nil {
				return res, d.rollbackFleet(ctx, &res, err, moved)
			}
		}
		names := make([]string, len(group))
		for j, st := range group {
			names[j] = st.h.Name
		}
		if err := d.capacity(ctx, names); err != nil {
			if len(moved) == 0 {
				return res, fmt.Errorf("%w; nothing was changed", err)
			}
			return res, d.rollbackFleet(ctx, &res, err, moved)
		}
		errs := make([]error, len(group))
		var wg sync.WaitGroup
		for j, st := range group {
			wg.Go(func() { errs[j] = d.host(ctx, st) })
		}
		wg.Wait()
		for _, st := range group {
			if st.moved {
				moved = append(moved, st)
			}
		}
		if err := errors.Join(errs...); err != nil {
			if len(moved) == 0 {
				return res, err
			}
			return res, d.rollbackFleet(ctx, &res, err, moved)
		}
	}
	if err := d.sweep(ctx, moved); err != nil {
		return res, d.rollbackFleet(ctx, &res, err, moved)
	}
	d.commit(ctx)
	if err := d.markGood(ctx); err != nil {
		return res, err
	}
	res.OK = true
	return res, nil
}

// hostState is one host for the whole deploy.
type hostState struct {
	h   Host
	res *HostResult
	// prevVersion and prevHash are what the host ran before (from its
	// status at preflight); "" for a first rollout.
	prevVersion, prevHash string
	// lease is the host lease, held from the host's deploy until the fleet
	// passed the sweep (or was rolled back).
	lease *lease
	// published: the new definition is current on the host.
	published bool
	// deregistered: the target is out of the LB by this deploy's hand.
	deregistered bool
	// moved: the host runs the new version (verified or not) and a fleet
	// rollback must return it.
	moved bool
	// baseline is the look taken when the host was verified.
	baseline look
	// stopKeep stops renewing lease; nil before it is taken.
	stopKeep func()
}

// releaseLease stops renewing the host lease and releases it.
func (st *hostState) releaseLease(ctx context.Context) {
	if st.lease == nil {
		return
	}
	if st.stopKeep != nil {
		st.stopKeep()
	}
	st.lease.release(ctx)
	st.lease = nil
}

// preflight reaches every agent and the LB before anything is touched, and
// returns each host's state with its current version.
func (d *Deployer) preflight(ctx context.Context) ([]*hostState, error) {
	var states []*hostState
	var probs, bad []string
	ports := map[string]string{}
	// A short bound: an LB or agent that is down now fails fast, yet one
	// refused connection does not.
	pctx, cancel := context.WithTimeout(ctx, min(d.o.RetryFor, 5*time.Second))
	defer cancel()
	for _, h := range d.o.Hosts {
		st := &hostState{h: h}
		states = append(states, st)
		s, err := call(d, pctx, h.Name, PhaseLease, "agent status", h.Agent.Status)
		if err != nil {
			probs = append(probs, fmt.Sprintf("host %s: %v", h.Name, err))
			continue
		}
		if c := s.Definitions.Current; c != nil {
			st.prevVersion, st.prevHash = c.Version, c.Hash
		}
		if h.Local {
			bad = append(bad, localProblems(pctx, h, s.Runtime, d.o.ImageExists, ports)...)
		}
	}
	// Every target in one Describe call.
	refs := make([]lbport.TargetRef, len(d.o.Hosts))
	for i, h := range d.o.Hosts {
		refs[i] = ref(h)
	}
	if ts, err := call(d, pctx, "", PhaseLease, "load balancer targets", func(ctx context.Context) ([]lbport.Target, error) {
		return d.poller.Read(ctx, refs...)
	}); err != nil {
		probs = append(probs, fmt.Sprintf("load balancer: %v", err))
	} else {
		for i, h := range d.o.Hosts {
			d.sawTarget(h.Name, "", ts[i])
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%w, nothing was changed: %w: %s", ErrPreflight, fleet.ErrInvalid, strings.Join(bad, "; "))
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("%w, nothing was changed: %s", ErrPreflight, strings.Join(probs, "; "))
	}
	return states, nil
}

// fleetLease takes the fleet lease on every agent, in host order, so a second
// deploy is refused at the first host whatever hosts it names, and keeps
// them renewed; losing one cancels the run. It returns the function that
// releases them all.
func (d *Deployer) fleetLease(ctx context.Context, cancel context.CancelCauseFunc) (func(), error) {
	ttl := d.o.Config.Deploy.LeaseTTL
	var leases []*lease
	releaseAll := func() {
		rctx, c := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer c()
		for _, l := range leases {
			l.release(rctx)
		}
	}
	for _, h := range d.o.Hosts {
		sent := d.clock.Now()
		l, err := call(d, ctx, h.Name, PhaseLease, "fleet lease", func(ctx context.Context) (agentapi.Lease, error) {
			return h.Agent.AcquireLease(ctx, true, d.o.Holder, ttl)
		})
		if err != nil {
			releaseAll()
			if errors.Is(err, agentapi.ErrLeaseHeld) {
				return nil, fmt.Errorf("%w (host %s: %v); nothing was changed — wait for it to finish", ErrInProgress, h.Name, err)
			}
			return nil, fmt.Errorf("%w, nothing was changed: fleet lease on %s: %v", ErrPreflight, h.Name, err)
		}
		leases = append(leases, newLease(h.Agent, true, h.Name, l, ttl, sent, d.clock))
	}
	d.mu.Lock()
	d.fleetLeases = leases
	d.mu.Unlock()
	kctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, l := range leases {
		wg.Go(func() { l.keep(kctx, func(err error) { cancel(err) }) })
	}
	return func() {
		stop()
		wg.Wait()
		releaseAll()
	}, nil
}

// fenceFleet confirms every fleet lease before a batch starts: a deploy
// whose fleet lease lapsed starts nothing new.
func (d *Deployer) fenceFleet(ctx context.Context) error {
	d.mu.Lock()
	leases := d.fleetLeases
	d.mu.Unlock()
	for _, l := range leases {
		if err := d.retry(ctx, l.host, PhaseLease, "renew the fleet lease", l.confirm); err != nil {
			return err
		}
	}
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	return nil
}

// abandon ends a deploy that lost its fleet lease: it changes nothing more;
// the agents' recovery returns every host whose lease lapses to its last
// good version.
func (d *Deployer) abandon(err error, moved []*hostState) error {
	names := make([]string, len(moved))
	for i, st := range moved {
		names[i] = st.h.Name
	}
	if len(names) == 0 {
		return fmt.Errorf("%w; this deploy changes nothing more", err)
	}
	return fmt.Errorf("%w; this deploy changes nothing more: %s return to their last good version by their agents' recovery when their host leases lapse", err, strings.Join(names, ", "))
}

// capacity waits until the LB reports enough targets outside the batch in
// service.
func (d *Deployer) capacity(ctx context.Context, batch []string) error {
	if d.required == 0 {
		return nil
	}
	begin := d.clock.Now()
	host := strings.Join(batch, ",")
	v, err := d.waitCapacity(ctx, host, PhaseCapacity, batch)
	if err != nil {
		d.emit(host, PhaseCapacity, EventFail, d.clock.Since(begin), err.Error())
		return err
	}
	if el := d.clock.Since(begin); el > d.o.Poll {
		d.emit(host, PhaseCapacity, EventEnd, el, v.String())
	}
	return nil
}

// recheck looks again at every host already deployed: the same instances,
// still up, verified by the agent, healthy and in rotation at the LB.
func (d *Deployer) recheck(ctx context.Context, moved []*hostState) error {
	begin := d.clock.Now()
	// All at once: their LB reads join one poll.
	errs := make([]error, len(moved))
	var wg sync.WaitGroup
	for i, st := range moved {
		wg.Go(func() { errs[i] = d.lookAgain(ctx, st, d.o.Version) })
	}
	wg.Wait()
	var probs []string
	for i, err := range errs {
		if err != nil {
			probs = append(probs, fmt.Sprintf("host %s: %v", moved[i].h.Name, err))
		}
	}
	if len(probs) > 0 {
		err := fmt.Errorf("%w: %s", ErrRecheck, strings.Join(probs, "; "))
		d.emit("", PhaseRecheck, EventFail, d.clock.Since(begin), err.Error())
		return err
	}
	d.emit("", PhaseRecheck, EventEnd, d.clock.Since(begin), fmt.Sprintf("%d deployed host(s) still up on %s", len(moved), d.o.Version))
	return nil
}

// sweep verifies every host after the last one deployed: each moved host
// looked at again (same instances, still up, agent verify, LB healthy and in
// rotation), every host at the new version, and requests through the LB
// reaching every host at the new version.
func (d *Deployer) sweep(ctx context.Context, moved []*hostState) error {
	begin := d.clock.Now()
	d.emit("", PhaseSweep, EventBegin, 0, "")
	// Every host at once: their LB reads join one poll.
	errs := make([]error, len(d.states))
	var wg sync.WaitGroup
	for i, st := range d.states {
		wg.Go(func() {
			if slices.Contains(moved, st) {
				errs[i] = d.lookAgain(ctx, st, d.o.Version)
				return
			}
			// Already on the version (publish changed nothing): verify it.
			if errs[i] = d.verifyAgent(ctx, st.h, d.o.Version); errs[i] == nil {
				_, errs[i] = d.waitTarget(ctx, st.h, PhaseSweep, healthyTimeout(d.o.Config), lbport.InService)
			}
		})
	}
	wg.Wait()
	var probs []string
	for i, err := range errs {
		if err != nil {
			probs = append(probs, fmt.Sprintf("host %s: %v", d.states[i].h.Name, err))
		}
	}
	if len(probs) == 0 {
		want := map[string]bool{}
		for _, h := range d.o.Hosts {
			want[h.Name] = true
		}
		if err := d.seeThroughLB(ctx, want, d.o.Version); err != nil {
			probs = append(probs, err.Error())
		}
	}
	if len(probs) > 0 {
		err := fmt.Errorf("%w: %s", ErrSweep, strings.Join(probs, "; "))
		d.emit("", PhaseSweep, EventFail, d.clock.Since(begin), err.Error())
		return err
	}
	d.emit("", PhaseSweep, EventEnd, d.clock.Since(begin), fmt.Sprintf("%d hosts on %s", len(d.o.Hosts), d.o.Version))
	return nil
}

// commit records on every host, in parallel and before any is marked good,
// that the whole fleet passed the final sweep on the new version (the commit
// point): a host whose lease then ends without release — the deployer died
// in markGood — completes the release itself and keeps the new version, so
// the fleet does not end split between two. A host that could not record it
// is noted and left to markGood: without the commit, a lapse of its lease
// returns it to its last good, as before.
func (d *Deployer) commit(ctx context.Context) {
	var wg sync.WaitGroup
	for _, st := range d.states {
		if st.lease == nil {
			continue
		}
		id := st.lease.id
		wg.Go(func() {
			err := d.retry(ctx, st.h.Name, PhaseSweep, "commit", func(ctx context.Context) error {
				return st.h.Agent.Commit(ctx, id, d.o.Version)
			})
			if err != nil {
				d.emit(st.h.Name, PhaseSweep, EventNote, 0, fmt.Sprintf("commit of %s not recorded (%v): if this deploy dies before releasing the host, the host returns to its last good version", d.o.Version, err))
			}
		})
	}
	wg.Wait()
}

// markGood records the new version as last known good on every host, now
// that the whole fleet passed the sweep, and releases the host leases.
func (d *Deployer) markGood(ctx context.Context) error {
	var errs []error
	for _, st := range d.states {
		if st.lease == nil {
			continue
		}
		begin := d.clock.Now()
		d.emit(st.h.Name, PhaseRelease, EventBegin, 0, "")
		err := d.retry(ctx, st.h.Name, PhaseRelease, "mark good", func(ctx context.Context) error {
			return st.h.Agent.MarkGood(ctx, st.lease.id)
		})
		el := d.clock.Since(begin)
		st.res.Phases = append(st.res.Phases, PhaseTime{Phase: PhaseRelease, Seconds: el.Seconds()})
		if err != nil {
			// The host is deployed and verified; only the bookkeeping failed.
			err = fmt.Errorf("mark good: %w", err)
			d.emit(st.h.Name, PhaseRelease, EventFail, el, err.Error())
			st.res.OK, st.res.Failed, st.res.Error = false, PhaseRelease, err.Error()
			errs = append(errs, &StepError{Host: st.h.Name, Phase: PhaseRelease, Err: err})
			continue
		}
		st.releaseLease(context.WithoutCancel(ctx))
		d.emit(st.h.Name, PhaseRelease, EventEnd, el, d.o.Version+" recorded as last known good")
	}
	return errors.Join(errs...)
}

// releaseHostLeases stops renewing the host leases still held (after a
// failure) and, with release, releases them; without, they lapse and the
// agents recover their hosts.
func (d *Deployer) releaseHostLeases(release bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, st := range d.states {
		if release {
			st.releaseLease(ctx)
			continue
		}
		if st.stopKeep != nil {
			st.stopKeep()
		}
		st.lease = nil
	}
}

// verifyAgent asks the agent to verify the listed services at version.
func (d *Deployer) verifyAgent(ctx context.Context, h Host, version string) error {
	rep, err := call(d, ctx, h.Name, PhaseVerify, "agent verify", func(ctx context.Context) (agentapi.VerifyReport, error) {
		return h.Agent.Verify(ctx, d.o.Verify, version)
	})
	if err != nil {
		return fmt.Errorf("agent verify: %w", err)
	}
	if !rep.OK {
		var bad []string
		for _, s := range rep.Services {
			if !s.OK {
				bad = append(bad, fmt.Sprintf("%s: %s", s.Name, s.Reason))
			}
		}
		if len(bad) == 0 {
			bad = append(bad, "agent reported failure without details")
		}
		return fmt.Errorf("agent verify: %s", strings.Join(bad, "; "))
	}
	if want := d.o.Verify; len(want) > 0 {
		for _, name := range want {
			if !slices.ContainsFunc(rep.Services, func(s agentapi.ServiceCheck) bool { return s.Name == name && s.OK }) {
				return fmt.Errorf("agent verify: service %s was not checked (is it in the definition?)", name)
			}
		}
	}
	return nil
}

// seeThroughLB sends requests through the LB until every host in want has
// answered at version, bounded by attempts proportional to the fleet.
func (d *Deployer) seeThroughLB(ctx context.Context, want map[string]bool, version string) error {
	seen := map[string]string{}
	attempts := 20 * (len(d.o.Hosts) + 1)
	var lastErr error
	for range attempts {
		s, err := d.o.Front.Get(ctx)
		if err != nil {
			lastErr = err
			continue
		}
		if s.Version == version {
			delete(want, s.Host)
		} else {
			seen[s.Host] = s.Version
		}
		if len(want) == 0 {
			return nil
		}
	}
	missing := make([]string, 0, len(want))
	for h := range want {
		missing = append(missing, h)
	}
	slices.Sort(missing)
	msg := fmt.Sprintf("through the load balancer, %d requests never reached %s at version %s", attempts, strings.Join(missing, ", "), version)
	if len(seen) > 0 {
		msg += fmt.Sprintf(" (other versions answered: %v)", seen)
	}
	if lastErr != nil {
		msg += fmt.Sprintf(" (last error: %v)", lastErr)
	}
	return errors.New(msg)
}

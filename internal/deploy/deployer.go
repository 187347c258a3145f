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
	// SIGTERM in health mode), e.g. ["gateway"].
	TargetServices []string
	// Clock measures phases and paces polling. Default: the real clock.
	Clock clockwork.Clock
	// Observer receives progress events. Optional.
	Observer Observer
	// Poll is the LB polling interval. Default: a tenth of the health check
	// interval, between 5ms and 100ms.
	Poll time.Duration
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
	// Seconds is the whole host, lease to release.
	Seconds float64 `json:"seconds"`
	// BoundSeconds is the analytic lower bound (see Bound).
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
	Bound   Bound        `json:"bound"`
}

// Deployer runs one rolling deploy. Create it with New; run it once.
type Deployer struct {
	o     Options
	clock clockwork.Clock
	obs   *serialObserver
	bound Bound
	lb    *lbView
	// poller watches targets: one Describe call per poll for every host
	// being waited on.
	poller *lbport.Poller
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
	for _, h := range opts.Hosts {
		if h.Agent == nil {
			probs = append(probs, fmt.Sprintf("host %s has no agent address (hosts[].agent)", h.Name))
		}
		if len(h.Definition) == 0 {
			probs = append(probs, fmt.Sprintf("host %s has no definition to publish", h.Name))
		}
	}
	if n := len(opts.Hosts); opts.Config != nil && n > 0 && !opts.AllowDowntime {
		if b := max(opts.Config.Deploy.BatchSize, 1); n-b < 1 {
			probs = append(probs, fmt.Sprintf("a batch of %d takes all %d host(s) out of rotation at once, so every request would reach nothing for a whole batch; "+
				"lower deploy.batch_size, add a host, or accept the downtime with --allow-downtime", b, n))
		}
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
	if opts.Holder == "" {
		opts.Holder = "deploy " + opts.Version
	}
	view := newLBView(opts.LB, opts.Config.LoadBalancer.PropagationMargin, opts.Clock)
	return &Deployer{o: opts, clock: opts.Clock, obs: &serialObserver{o: opts.Observer}, bound: LowerBound(opts.Config),
		lb: view, poller: lbport.NewPoller(view, opts.Clock, opts.Poll)}, nil
}

func (d *Deployer) emit(host string, p Phase, k EventKind, elapsed time.Duration, detail string) {
	d.obs.Event(Event{At: d.clock.Now(), Host: host, Phase: p, Kind: k, Elapsed: elapsed.Seconds(), Detail: detail})
}

// Run deploys to every host in batches of deploy.batch_size, stops at the first
// batch with a failed host, and after the last host verifies the whole fleet.
// Errors: ErrPreflight or ErrInProgress (nothing changed), a *StepError for the
// first failed host (joined with any other failures of its batch), ErrSweep.
// The Result is filled in every case.
func (d *Deployer) Run(ctx context.Context) (res Result, err error) {
	start := d.clock.Now()
	res = Result{Version: d.o.Version, Bound: d.bound}
	defer func() { res.Seconds = d.clock.Since(start).Seconds() }()

	prev, err := d.preflight(ctx)
	if err != nil {
		return res, err
	}
	release, err := d.fleetLease(ctx)
	if err != nil {
		return res, err
	}
	defer release()

	batch := max(d.o.Config.Deploy.BatchSize, 1)
	for i := 0; i < len(d.o.Hosts); i += batch {
		hosts := d.o.Hosts[i:min(i+batch, len(d.o.Hosts))]
		results := make([]HostResult, len(hosts))
		errs := make([]error, len(hosts))
		var wg sync.WaitGroup
		for j, h := range hosts {
			wg.Go(func() {
				results[j], errs[j] = d.host(ctx, h, prev[h.Name])
			})
		}
		wg.Wait()
		res.Hosts = append(res.Hosts, results...)
		if err := errors.Join(errs...); err != nil {
			return res, err
		}
	}
	if err := d.sweep(ctx); err != nil {
		return res, err
	}
	res.OK = true
	return res, nil
}

// preflight reaches every agent and the LB before anything is touched, and
// returns each host's current version.
func (d *Deployer) preflight(ctx context.Context) (map[string]string, error) {
	prev := map[string]string{}
	var probs []string
	for _, h := range d.o.Hosts {
		st, err := h.Agent.Status(ctx)
		if err != nil {
			probs = append(probs, fmt.Sprintf("host %s: %v", h.Name, err))
			continue
		}
		if st.Definitions.Current != nil {
			prev[h.Name] = st.Definitions.Current.Version
		}
		if _, err := d.lb.Target(ctx, h); err != nil {
			probs = append(probs, fmt.Sprintf("load balancer (target %s): %v", h.Name, err))
		}
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("%w, nothing was changed: %s", ErrPreflight, strings.Join(probs, "; "))
	}
	return prev, nil
}

// fleetLease takes the fleet lease on every agent, in host order, so a second
// deploy is refused at the first host whatever hosts it names. It returns the
// function that releases them all.
func (d *Deployer) fleetLease(ctx context.Context) (func(), error) {
	ttl := d.o.Config.Deploy.LeaseTTL
	type held struct {
		a  Agent
		id string
	}
	var leases []held
	releaseAll := func() {
		for _, l := range leases {
			_ = l.a.ReleaseLease(context.WithoutCancel(ctx), true, l.id)
		}
	}
	for _, h := range d.o.Hosts {
		l, err := h.Agent.AcquireLease(ctx, true, d.o.Holder, ttl)
		if err != nil {
			releaseAll()
			if errors.Is(err, agentapi.ErrLeaseHeld) {
				return nil, fmt.Errorf("%w (host %s: %v); nothing was changed — wait for it to finish", ErrInProgress, h.Name, err)
			}
			return nil, fmt.Errorf("%w, nothing was changed: fleet lease on %s: %v", ErrPreflight, h.Name, err)
		}
		leases = append(leases, held{h.Agent, l.ID})
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := d.clock.NewTicker(max(ttl/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.Chan():
				for _, l := range leases {
					_, _ = l.a.RenewLease(ctx, true, l.id, ttl)
				}
			}
		}
	})
	return func() {
		close(stop)
		wg.Wait()
		releaseAll()
	}, nil
}

// sweep verifies every host after the last one deployed: each agent says every
// listed service runs the new version and is healthy, the LB reports every
// target healthy and in rotation, and requests through the LB reach every host
// at the new version.
func (d *Deployer) sweep(ctx context.Context) error {
	begin := d.clock.Now()
	d.emit("", PhaseSweep, EventBegin, 0, "")
	var probs []string
	for _, h := range d.o.Hosts {
		if err := d.verifyAgent(ctx, h, d.o.Version); err != nil {
			probs = append(probs, fmt.Sprintf("host %s: %v", h.Name, err))
		}
		// One slow health check can flip a target for an interval; the
		// sweep waits, bounded, for the LB's settled view.
		r := &hostRun{d: d, h: h}
		if _, err := r.waitTarget(ctx, healthyTimeout(d.o.Config), lbport.InService); err != nil {
			probs = append(probs, fmt.Sprintf("host %s: load balancer does not report it healthy and in rotation: %v", h.Name, err))
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

// verifyAgent asks the agent to verify the listed services at version.
func (d *Deployer) verifyAgent(ctx context.Context, h Host, version string) error {
	rep, err := h.Agent.Verify(ctx, d.o.Verify, version)
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

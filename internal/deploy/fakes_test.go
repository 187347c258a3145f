package deploy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/lbport"
)

// fakeDef is the definition the fakes publish: just a version.
type fakeDef struct {
	Version string `json:"version"`
}

func defBytes(version string) []byte {
	b, _ := json.Marshal(fakeDef{Version: version})
	return b
}

func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// fakeAgent is an in-memory host agent: a definition store (current,
// previous, last good), running services at a version, a host lease and a
// fleet lease.
type fakeAgent struct {
	mu       sync.Mutex
	name     string
	services []string
	current  []byte
	previous []byte
	lastGood []byte
	running  string // version running; "" when stopped
	healthy  bool
	lease    string
	fleet    string
	leases   int
	log      []string
	lb       *fakeLB
	// started is when the running version started (a new instance each
	// start); gatewayExited, when set, is when its gateway exited.
	started       time.Time
	gatewayExited time.Time
	// crashFor is a version whose gateway exits after crashAfter status
	// reads since it started (a late crash); statusReads counts them.
	crashFor    string
	crashAfter  int
	statusReads int
	// failures to inject
	unreachable   bool
	failStartFor  string // version whose start fails
	unhealthyFor  string // version that starts but fails verify
	killOnStop    bool
	loseLeaseOnce bool
	// committed is the version the deploy committed on this host (its
	// fleet passed the sweep); beforeMarkGood, when set, runs as MarkGood
	// is called.
	committed      string
	beforeMarkGood func()
	// stopTakes is how long a stop takes: the services' drain serve period
	// (modelled time: only for tests run in a synctest bubble).
	stopTakes time.Duration
}

func newFakeAgent(name, version string, services []string) *fakeAgent {
	d := defBytes(version)
	return &fakeAgent{name: name, services: services, current: d, lastGood: d, running: version, healthy: true}
}

func (a *fakeAgent) record(s string) { a.log = append(a.log, s) }

func (a *fakeAgent) ref(b []byte) *agentapi.DefinitionRef {
	if b == nil {
		return nil
	}
	var d fakeDef
	_ = json.Unmarshal(b, &d)
	return &agentapi.DefinitionRef{Version: d.Version, Hash: hashOf(b)}
}

func (a *fakeAgent) Status(context.Context) (agentapi.Status, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.unreachable {
		return agentapi.Status{}, fmt.Errorf("%w: connection refused", agentapi.ErrUnreachable)
	}
	st := agentapi.Status{Host: a.name, Runtime: "fake", Definitions: agentapi.Definitions{Current: a.ref(a.current), Previous: a.ref(a.previous), LastGood: a.ref(a.lastGood)}}
	a.statusReads++
	a.maybeCrash()
	for _, s := range a.services {
		ss := agentapi.ServiceStatus{Name: s, Version: a.running, Running: a.running != "", ID: s + "-" + a.running}
		if !a.started.IsZero() {
			t := a.started
			ss.StartedAt = &t
		}
		if s == "gateway" && !a.gatewayExited.IsZero() {
			t := a.gatewayExited
			ss.Running, ss.FinishedAt = false, &t
		}
		st.Services = append(st.Services, ss)
	}
	return st, nil
}

func (a *fakeAgent) AcquireLease(_ context.Context, fleet bool, holder string, _ time.Duration) (agentapi.Lease, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	slot := &a.lease
	if fleet {
		slot = &a.fleet
	}
	if *slot != "" {
		return agentapi.Lease{}, fmt.Errorf("%w: by someone", agentapi.ErrLeaseHeld)
	}
	a.leases++
	*slot = fmt.Sprintf("%s-%v-%d", holder, fleet, a.leases)
	return agentapi.Lease{ID: *slot, Holder: holder}, nil
}

func (a *fakeAgent) RenewLease(_ context.Context, fleet bool, id string, _ time.Duration) (agentapi.Lease, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.unreachable {
		return agentapi.Lease{}, fmt.Errorf("%w: connection refused", agentapi.ErrUnreachable)
	}
	if !fleet && a.loseLeaseOnce && a.lease == id {
		a.loseLeaseOnce = false
		a.lease = ""
	}
	slot := a.lease
	if fleet {
		slot = a.fleet
	}
	if slot != id {
		return agentapi.Lease{}, agentapi.ErrNoLease
	}
	return agentapi.Lease{ID: id}, nil
}

func (a *fakeAgent) ReleaseLease(_ context.Context, fleet bool, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	slot := &a.lease
	if fleet {
		slot = &a.fleet
	}
	if *slot != id {
		return agentapi.ErrNoLease
	}
	*slot = ""
	return nil
}

func (a *fakeAgent) checkLease(id string) error {
	if id == "" || a.lease != id {
		return agentapi.ErrNoLease
	}
	return nil
}

func (a *fakeAgent) Publish(_ context.Context, lease string, def []byte) (agentapi.PublishReport, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.checkLease(lease); err != nil {
		return agentapi.PublishReport{}, err
	}
	a.record("publish")
	a.previous, a.current = a.current, def
	return agentapi.PublishReport{Current: *a.ref(def), Changed: true}, nil
}

func (a *fakeAgent) Drain(_ context.Context, lease string, _ []string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.checkLease(lease); err != nil {
		return err
	}
	a.record("drain")
	a.healthy = false
	return nil
}

func (a *fakeAgent) Stop(_ context.Context, lease string) (agentapi.StopReport, error) {
	a.mu.Lock()
	takes := a.stopTakes
	a.mu.Unlock()
	time.Sleep(takes) // the services serving their drain period (a synctest bubble's clock)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.checkLease(lease); err != nil {
		return agentapi.StopReport{}, err
	}
	if a.lb != nil && a.lb.routable(a.name) {
		a.record("STOPPED WHILE IN ROTATION")
	}
	a.record("stop")
	a.running, a.healthy, a.started, a.gatewayExited = "", false, time.Time{}, time.Time{}
	var rep agentapi.StopReport
	for _, s := range a.services {
		rep.Services = append(rep.Services, agentapi.StopResult{Name: s, Killed: a.killOnStop && s == "gateway", Seconds: 0.01})
	}
	return rep, nil
}

// maybeCrash exits the gateway of crashFor once crashAfter status reads
// have passed since it started.
func (a *fakeAgent) maybeCrash() {
	if a.crashFor != "" && a.running == a.crashFor && a.gatewayExited.IsZero() && a.statusReads >= a.crashAfter {
		a.gatewayExited, a.healthy = time.Now(), false
	}
}

func (a *fakeAgent) startCurrent() (agentapi.StartReport, error) {
	a.started, a.gatewayExited, a.statusReads = time.Now(), time.Time{}, 0
	v := a.ref(a.current).Version
	if v == a.failStartFor {
		a.running, a.healthy = "", false
		return agentapi.StartReport{}, fmt.Errorf("gateway exited with code 1 before answering its health check")
	}
	a.running, a.healthy = v, v != a.unhealthyFor
	return agentapi.StartReport{Services: []agentapi.StartResult{{Name: "gateway"}}}, nil
}

func (a *fakeAgent) Start(_ context.Context, lease string) (agentapi.StartReport, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.checkLease(lease); err != nil {
		return agentapi.StartReport{}, err
	}
	a.record("start")
	return a.startCurrent()
}

func (a *fakeAgent) Verify(_ context.Context, services []string, version string) (agentapi.VerifyReport, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.maybeCrash()
	rep := agentapi.VerifyReport{OK: true}
	if len(services) == 0 {
		services = a.services
	}
	for _, s := range services {
		c := agentapi.ServiceCheck{Name: s, OK: true}
		switch {
		case a.running != version:
			c.OK, c.Reason = false, fmt.Sprintf("runs %q, want %q", a.running, version)
		case !a.healthy:
			c.OK, c.Reason = false, "health check answers 503"
		}
		rep.OK = rep.OK && c.OK
		rep.Services = append(rep.Services, c)
	}
	return rep, nil
}

func (a *fakeAgent) Rollback(_ context.Context, lease string) (agentapi.StartReport, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.checkLease(lease); err != nil {
		return agentapi.StartReport{}, err
	}
	if a.previous == nil {
		return agentapi.StartReport{}, errors.New("no previous definition")
	}
	a.record("rollback")
	a.current, a.previous = a.previous, a.current
	return a.startCurrent()
}

func (a *fakeAgent) Commit(_ context.Context, lease, version string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.checkLease(lease); err != nil {
		return err
	}
	a.committed = version
	return nil
}

func (a *fakeAgent) MarkGood(_ context.Context, lease string) error {
	if a.beforeMarkGood != nil {
		a.beforeMarkGood()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.checkLease(lease); err != nil {
		return err
	}
	a.lastGood = a.current
	return nil
}

func (a *fakeAgent) snapshot() (running string, healthy bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running, a.healthy
}

// fakeLB is an in-memory target group: a deregistered target leaves rotation
// at once and drains its in-flight requests over a few polls; a registered
// target turns healthy after a few polls when its agent is healthy.
type fakeLB struct {
	mu      sync.Mutex
	targets map[string]*fakeTarget
	agents  map[string]*fakeAgent
	// stuckInFlight keeps a target's in-flight count up forever.
	stuckInFlight string
	// refuse makes the next n calls fail as a refused connection.
	refuse int
	// changes logs every register and deregister.
	changes []string
}

func (l *fakeLB) refused() error {
	if l.refuse > 0 {
		l.refuse--
		return fmt.Errorf("lb admin: dial tcp 127.0.0.1:1: %w", syscall.ECONNREFUSED)
	}
	return nil
}

type fakeTarget struct {
	registered bool
	state      string
	inFlight   int
	polls      int
}

func newFakeLB(agents ...*fakeAgent) *fakeLB {
	lb := &fakeLB{targets: map[string]*fakeTarget{}, agents: map[string]*fakeAgent{}}
	for _, a := range agents {
		lb.targets[a.name] = &fakeTarget{registered: true, state: "healthy", inFlight: 2}
		lb.agents[a.name] = a
		a.lb = lb
	}
	return lb
}

func (l *fakeLB) routable(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.targets[id]
	return t.inFlight > 0 || (t.registered && t.state == "healthy")
}

func (l *fakeLB) Kind() string { return "fake" }

func (l *fakeLB) Settings(context.Context) (lbport.Settings, error) {
	return lbport.Settings{}, lbport.ErrUnsupported
}

func (l *fakeLB) Apply(context.Context, lbport.Settings) error { return lbport.ErrUnsupported }

func (l *fakeLB) Describe(ctx context.Context, refs ...lbport.TargetRef) ([]lbport.Target, error) {
	l.mu.Lock()
	err := l.refused()
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := make([]lbport.Target, 0, len(refs))
	for _, r := range refs {
		t, err := l.target(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		t.ID, t.Address = r.ID, r.Address
		out = append(out, t)
	}
	return out, nil
}

func (l *fakeLB) target(_ context.Context, id string) (lbport.Target, error) {
	l.mu.Lock()
	t := l.targets[id]
	l.mu.Unlock()
	if t == nil {
		return lbport.Target{}, fmt.Errorf("unknown target %s", id)
	}
	_, healthy := l.agents[id].snapshot()
	l.mu.Lock()
	defer l.mu.Unlock()
	t.polls++
	switch {
	case !t.registered:
		if t.inFlight > 0 && id != l.stuckInFlight {
			t.inFlight--
		}
		if t.inFlight == 0 {
			return lbport.Target{State: lbport.StateUnused}, nil
		}
		return lbport.Target{State: lbport.StateDraining, InFlight: t.inFlight}, nil
	case healthy && t.polls >= 2:
		t.state = "healthy"
	case !healthy && t.polls >= 2:
		t.state = "unhealthy"
		if t.inFlight > 0 && id != l.stuckInFlight {
			t.inFlight--
		}
	}
	st, err := lbport.ParseState(t.state)
	if err != nil {
		return lbport.Target{}, err
	}
	return lbport.Target{State: st, InRotation: t.state == "healthy", InFlight: t.inFlight}, nil
}

func (l *fakeLB) Register(_ context.Context, r lbport.TargetRef) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refused(); err != nil {
		return err
	}
	l.changes = append(l.changes, "register "+r.ID)
	t := l.targets[r.ID]
	t.registered, t.state, t.polls = true, "initial", 0
	return nil
}

func (l *fakeLB) Deregister(_ context.Context, r lbport.TargetRef) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.refused(); err != nil {
		return err
	}
	l.changes = append(l.changes, "deregister "+r.ID)
	t := l.targets[r.ID]
	t.registered, t.polls = false, 0
	return nil
}

// Get answers as a random in-rotation target would.
func (l *fakeLB) Get(context.Context) (Sighting, error) {
	l.mu.Lock()
	var in []string
	for id, t := range l.targets {
		if t.registered && t.state == "healthy" {
			in = append(in, id)
		}
	}
	l.mu.Unlock()
	if len(in) == 0 {
		return Sighting{}, errors.New("503 no targets")
	}
	id := in[rand.IntN(len(in))]
	v, _ := l.agents[id].snapshot()
	if v == "" {
		return Sighting{}, errors.New("502 target refused")
	}
	return Sighting{Host: id, Version: v}, nil
}

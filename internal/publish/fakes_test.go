package publish

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/platform"
)

// behavior is how an image behaves once its process runs.
type behavior struct {
	// crashAfter: each run exits this long after it started; 0 never exits.
	crashAfter time.Duration
	// crashRuns: only the first crashRuns runs crash; 0 means every run.
	crashRuns int
	// exitCode of each crash.
	exitCode int
	// bootTime: from start until the health check passes (slow boot).
	bootTime time.Duration
	// unhealthy: the health check never passes.
	unhealthy bool
}

// simMachine is one machine of the fake platform, simulated lazily from its
// transitions: nothing happens between calls, every call first advances the
// machine to the clock's now.
type simMachine struct {
	id, app   string
	cfg       platform.Config
	beh       behavior
	state     platform.State
	events    []platform.Event // oldest first, the full history
	instance  int
	rc        int
	runs      int
	startedAt time.Time
	nextAt    time.Time // next transition; zero for none
	created   time.Time
	address   string
}

var never = time.Time{}

// fakePlatform is a machines platform in memory, driven by a clockwork clock:
// machines boot after startDelay, crash per their image's behavior, restart
// per their restart policy after restartDelay, and keep only the newest
// capacity events — the bounded list of DESIGN §1b.
type fakePlatform struct {
	mu           sync.Mutex
	clock        clockwork.Clock
	behaviors    map[string]behavior // by image
	capacity     int
	startDelay   time.Duration
	restartDelay time.Duration
	// giveRestartCount/giveStartedAt: which monotonic signals Get reports
	// (docker gives both; fly gives neither beyond the events).
	giveRestartCount, giveStartedAt bool
	machines                        map[string]*simMachine
	order                           []string
	seq                             int
	// failGet, when set, may fail a Get (a control-plane error).
	failGet func(now time.Time, id string) error
	// updateErr, when set, is returned by Update after it has updated the
	// machine (a control plane that did the work but did not answer in time).
	updateErr error
	calls     []string
}

func newFakePlatform(clock clockwork.Clock) *fakePlatform {
	return &fakePlatform{clock: clock, behaviors: map[string]behavior{}, capacity: 5, startDelay: 500 * time.Millisecond,
		restartDelay: 200 * time.Millisecond, machines: map[string]*simMachine{}}
}

func (f *fakePlatform) Name() string { return "fake" }

func (f *fakePlatform) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// Calls returns the mutating calls made so far, e.g. "update m1 app:v1".
func (f *fakePlatform) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakePlatform) event(m *simMachine, e platform.Event) { m.events = append(m.events, e) }

// boot schedules m's next start after d.
func (f *fakePlatform) boot(m *simMachine, from time.Time, d time.Duration) {
	m.state, m.nextAt = platform.StateStarting, from.Add(d)
}

// advance runs m's transitions up to now.
func (f *fakePlatform) advance(m *simMachine, now time.Time) {
	for !m.nextAt.IsZero() && !m.nextAt.After(now) {
		t := m.nextAt
		switch m.state {
		case platform.StateStarting:
			m.state, m.startedAt = platform.StateStarted, t
			m.runs++
			f.event(m, platform.Event{Type: platform.EventStart, Status: "started", Source: "flyd", Timestamp: t})
			m.nextAt = never
			if m.beh.crashAfter > 0 && (m.beh.crashRuns == 0 || m.runs <= m.beh.crashRuns) {
				m.nextAt = t.Add(m.beh.crashAfter)
			}
		case platform.StateStarted:
			r := m.cfg.Restart.Effective()
			restart := r.Policy == platform.RestartAlways ||
				(r.Policy == platform.RestartOnFailure && m.beh.exitCode != 0 && m.rc < r.MaxRetries)
			x := &platform.Exit{ExitCode: m.beh.exitCode, Restarting: restart, ExitedAt: t}
			if restart {
				m.rc++
			}
			f.event(m, platform.Event{Type: platform.EventExit, Status: "stopped", Source: "flyd", Timestamp: t, Exit: x, RestartCount: m.rc})
			if restart {
				f.boot(m, t, f.restartDelay)
			} else {
				m.state, m.nextAt = platform.StateStopped, never
			}
		default:
			m.nextAt = never
		}
	}
}

func (f *fakePlatform) view(m *simMachine) platform.Machine {
	ev := make([]platform.Event, 0, len(m.events))
	for i := len(m.events) - 1; i >= 0; i-- {
		ev = append(ev, m.events[i])
	}
	out := platform.Machine{ID: m.id, Name: m.id, App: m.app, State: m.state, Config: m.cfg.Clone(), ImageRef: m.cfg.Image,
		InstanceID: fmt.Sprintf("%s-i%d", m.id, m.instance), Address: m.address, Events: platform.TrimEvents(ev, f.capacity),
		CreatedAt: m.created}
	if f.giveRestartCount {
		out.RestartCount, out.HasRestartCount = m.rc, true
	}
	if f.giveStartedAt && m.state == platform.StateStarted {
		out.StartedAt = m.startedAt
	}
	return out
}

func (f *fakePlatform) get(app, id string) (*simMachine, error) {
	m, ok := f.machines[id]
	if !ok || m.app != app || m.state == platform.StateDestroyed {
		return nil, fmt.Errorf("machine %s: %w", id, platform.ErrNotFound)
	}
	f.advance(m, f.clock.Now())
	return m, nil
}

func (f *fakePlatform) List(_ context.Context, app string) ([]platform.Machine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []platform.Machine
	for _, id := range f.order {
		if m, err := f.get(app, id); err == nil {
			out = append(out, f.view(m))
		}
	}
	return out, nil
}

func (f *fakePlatform) Get(_ context.Context, app, id string) (platform.Machine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failGet != nil {
		if err := f.failGet(f.clock.Now(), id); err != nil {
			return platform.Machine{}, err
		}
	}
	m, err := f.get(app, id)
	if err != nil {
		return platform.Machine{}, err
	}
	return f.view(m), nil
}

func (f *fakePlatform) Create(_ context.Context, app string, cfg platform.Config) (platform.Machine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	now := f.clock.Now()
	id := fmt.Sprintf("m%d", f.seq)
	m := &simMachine{id: id, app: app, cfg: cfg.Clone(), beh: f.behaviors[cfg.Image], created: now, address: id + ".test:80", instance: 1}
	f.event(m, platform.Event{Type: platform.EventLaunch, Status: "created", Source: "user", Timestamp: now})
	f.boot(m, now, f.startDelay)
	f.machines[id] = m
	f.order = append(f.order, id)
	f.record("create %s %s", id, cfg.Image)
	return f.view(m), nil
}

func (f *fakePlatform) stopProcess(m *simMachine, now time.Time) {
	if m.state == platform.StateStarted {
		f.event(m, platform.Event{Type: platform.EventExit, Status: "stopped", Source: "user", Timestamp: now,
			Exit: &platform.Exit{Signal: 15, RequestedStop: true, ExitedAt: now}})
	}
	m.state, m.nextAt = platform.StateStopped, never
}

func (f *fakePlatform) Update(_ context.Context, app, id string, cfg platform.Config) (platform.Machine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.get(app, id)
	if err != nil {
		return platform.Machine{}, err
	}
	now := f.clock.Now()
	f.stopProcess(m, now)
	m.cfg, m.beh, m.rc, m.runs = cfg.Clone(), f.behaviors[cfg.Image], 0, 0
	m.instance++
	f.event(m, platform.Event{Type: platform.EventUpdate, Status: "replacing", Source: "user", Timestamp: now})
	f.boot(m, now, f.startDelay)
	f.record("update %s %s", id, cfg.Image)
	if f.updateErr != nil {
		return platform.Machine{}, f.updateErr
	}
	return f.view(m), nil
}

func (f *fakePlatform) Start(_ context.Context, app, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.get(app, id)
	if err != nil {
		return err
	}
	if m.state == platform.StateStopped || m.state == platform.StateSuspended || m.state == platform.StateCreated {
		m.rc, m.runs = 0, 0
		f.boot(m, f.clock.Now(), f.startDelay)
	}
	f.record("start %s", id)
	return nil
}

func (f *fakePlatform) Stop(_ context.Context, app, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.get(app, id)
	if err != nil {
		return err
	}
	f.stopProcess(m, f.clock.Now())
	f.record("stop %s", id)
	return nil
}

func (f *fakePlatform) Destroy(_ context.Context, app, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.get(app, id)
	if err != nil {
		return err
	}
	f.stopProcess(m, f.clock.Now())
	m.state = platform.StateDestroyed
	f.record("destroy %s %s", id, m.cfg.Image)
	return nil
}

func (f *fakePlatform) Wait(ctx context.Context, app, id string, state platform.State, timeout time.Duration) error {
	deadline := f.clock.Now().Add(timeout)
	for {
		m, err := f.Get(ctx, app, id)
		if err != nil {
			return err
		}
		if m.State == state {
			return nil
		}
		if !f.clock.Now().Before(deadline) {
			return fmt.Errorf("wait %s for %s: %w", id, state, platform.ErrTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.clock.After(100 * time.Millisecond):
		}
	}
}

// healthyAddr reports whether the machine at address answers its health
// check now.
func (f *fakePlatform) healthyAddr(addr string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.machines {
		if m.address != addr {
			continue
		}
		if m.state == platform.StateDestroyed {
			return false
		}
		now := f.clock.Now()
		f.advance(m, now)
		return m.state == platform.StateStarted && !m.beh.unhealthy && now.Sub(m.startedAt) >= m.beh.bootTime
	}
	return false
}

// healthyApp reports whether some started machine of app answers now (the
// app's own URL, served by its machines: Fly's proxy).
func (f *fakePlatform) healthyApp(app string) bool {
	f.mu.Lock()
	var addrs []string
	for _, m := range f.machines {
		if m.app == app {
			addrs = append(addrs, m.address)
		}
	}
	f.mu.Unlock()
	for _, a := range addrs {
		if f.healthyAddr(a) {
			return true
		}
	}
	return false
}

var _ platform.Platform = (*fakePlatform)(nil)

// fakeChecker answers health checks from the fake platform's simulation:
// http://<machine address>/healthz, or http://<app>.app.test/healthz for the
// app's own endpoint.
type fakeChecker struct{ p *fakePlatform }

func (c fakeChecker) Check(_ context.Context, raw string) Probe {
	p := Probe{Ran: true, Target: raw}
	u, err := url.Parse(raw)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	ok := false
	if app, found := strings.CutSuffix(u.Hostname(), ".app.test"); found {
		ok = c.p.healthyApp(app)
	} else {
		ok = c.p.healthyAddr(u.Host)
	}
	if ok {
		p.OK, p.Status = true, 200
	} else {
		p.Error = "connection refused"
	}
	return p
}

// fakeRouter is a load balancer in memory: a registered target enters
// rotation once its machine is healthy and it has been registered for
// healthyAfter (the LB's healthy threshold × interval); a deregistered one
// leaves at once.
type fakeRouter struct {
	mu           sync.Mutex
	p            *fakePlatform
	targets      map[string]string    // id -> address
	registered   map[string]time.Time // id -> when
	healthyAfter time.Duration
	calls        []string
}

func newFakeRouter(p *fakePlatform) *fakeRouter {
	return &fakeRouter{p: p, targets: map[string]string{}, registered: map[string]time.Time{}, healthyAfter: 2 * time.Second}
}

func (r *fakeRouter) Kind() string { return "fake" }

func (r *fakeRouter) Settings(context.Context) (lbport.Settings, error) {
	return lbport.Settings{}, lbport.ErrUnsupported
}

func (r *fakeRouter) Apply(context.Context, lbport.Settings) error { return lbport.ErrUnsupported }

func (r *fakeRouter) Register(_ context.Context, t lbport.TargetRef) error {
	id, addr := t.ID, t.Address
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.targets[id]; !ok {
		r.registered[id] = r.p.clock.Now()
	}
	r.targets[id] = addr
	r.calls = append(r.calls, "register "+id)
	return nil
}

// inRotation reports whether target id takes requests now.
func (r *fakeRouter) inRotation(id, addr string) bool {
	r.mu.Lock()
	since := r.registered[id]
	r.mu.Unlock()
	return r.p.clock.Since(since) >= r.healthyAfter && r.p.healthyAddr(addr)
}

func (r *fakeRouter) Deregister(_ context.Context, t lbport.TargetRef) error {
	id := t.ID
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.targets[id]; ok {
		r.calls = append(r.calls, "deregister "+id)
	}
	delete(r.targets, id)
	delete(r.registered, id)
	return nil
}

func (r *fakeRouter) Describe(_ context.Context, ts ...lbport.TargetRef) ([]lbport.Target, error) {
	out := make([]lbport.Target, 0, len(ts))
	for _, t := range ts {
		r.mu.Lock()
		addr, ok := r.targets[t.ID]
		r.mu.Unlock()
		switch {
		case !ok:
			out = append(out, lbport.Target{ID: t.ID, State: lbport.StateUnused, Reason: lbport.ReasonNotRegistered})
		case r.inRotation(t.ID, addr):
			out = append(out, lbport.Target{ID: t.ID, Address: addr, State: lbport.StateHealthy, InRotation: true})
		default:
			out = append(out, lbport.Target{ID: t.ID, Address: addr, State: lbport.StateInitial})
		}
	}
	return out, nil
}

// Serving reports whether a request sent now would reach a healthy machine,
// and lists the registered targets.
func (r *fakeRouter) Serving() (bool, []string) {
	r.mu.Lock()
	var ids, addrs []string
	for id, a := range r.targets {
		ids, addrs = append(ids, id), append(addrs, a)
	}
	r.mu.Unlock()
	ok := false
	for i := range ids {
		ok = ok || r.inRotation(ids[i], addrs[i])
	}
	sort.Strings(ids)
	return ok, ids
}

func (r *fakeRouter) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

var _ lbport.Driver = (*fakeRouter)(nil)

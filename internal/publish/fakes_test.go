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
	// status is what the health check answers once booted (0: 200) — e.g.
	// 500 for an app that runs but answers wrongly.
	status int
	// bootStatus is what it answers while booting (0: connection refused),
	// e.g. 503.
	bootStatus int
	// signal ends each crash with this signal (exit code -1), oom with an
	// OOM kill.
	signal int
	oom    bool
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
	pending   platform.Config // the config a lagging update lands
}

var never = time.Time{}

// fakePlatform is a machines platform in memory, driven by a clockwork clock:
// machines boot after startDelay, crash per their image's behavior, restart
// per their restart policy after restartDelay, and keep only the newest
// capacity events — the bounded list real platforms keep (docs/publish.md).
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
	// skew is added to every time the platform reports (its clock is off
	// ours by this much).
	skew time.Duration
	// refuseUpdates: the next refuseUpdates updates are refused with a 429
	// before anything happens.
	refuseUpdates int
	// updateLag: an update takes this long on the platform (the old process
	// draining) before the machine runs the new config; the call itself
	// returns a timeout at once (a call timeout shorter than the drain).
	updateLag time.Duration
	// checkImages: CheckImage refuses images without a behavior.
	checkImages bool
	calls       []string
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
			x := &platform.Exit{ExitCode: m.beh.exitCode, Restarting: restart, ExitedAt: t, Signal: m.beh.signal, OOMKilled: m.beh.oom}
			if m.beh.signal != 0 {
				x.ExitCode = -1
			}
			if restart {
				m.rc++
			}
			f.event(m, platform.Event{Type: platform.EventExit, Status: "stopped", Source: "flyd", Timestamp: t, Exit: x, RestartCount: m.rc})
			if restart {
				f.boot(m, t, f.restartDelay)
			} else {
				m.state, m.nextAt = platform.StateStopped, never
			}
		case platform.StateStopping:
			// A lagging update lands: the old process has stopped; the new
			// config runs as a new instance.
			f.event(m, platform.Event{Type: platform.EventExit, Status: "stopped", Source: "user", Timestamp: t,
				Exit: &platform.Exit{Signal: 15, RequestedStop: true, ExitedAt: t}})
			f.applyUpdate(m, t, m.pending)
		default:
			m.nextAt = never
		}
	}
}

// applyUpdate replaces m's config at t and boots the new instance.
func (f *fakePlatform) applyUpdate(m *simMachine, t time.Time, cfg platform.Config) {
	m.cfg, m.beh, m.rc, m.runs = cfg.Clone(), f.behaviors[cfg.Image], 0, 0
	m.instance++
	f.event(m, platform.Event{Type: platform.EventUpdate, Status: "replacing", Source: "user", Timestamp: t})
	f.boot(m, t, f.startDelay)
}

// kill ends machine id's process with SIGKILL now, as the kernel or an
// operator would; the platform restarts it per its policy.
func (f *fakePlatform) kill(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.machines[id]
	now := f.clock.Now()
	f.advance(m, now)
	if m.state != platform.StateStarted {
		return
	}
	m.rc++
	f.event(m, platform.Event{Type: platform.EventExit, Status: "stopped", Source: "flyd", Timestamp: now, RestartCount: m.rc,
		Exit: &platform.Exit{ExitCode: -1, Signal: 9, Restarting: true, ExitedAt: now}})
	f.boot(m, now, f.restartDelay)
}

// CheckImage implements platform.ImageChecker when checkImages is set.
func (f *fakePlatform) CheckImage(_ context.Context, image string) error {
	if _, ok := f.behaviors[image]; f.checkImages && !ok {
		return fmt.Errorf("%w: %s", platform.ErrImageNotFound, image)
	}
	return nil
}

func (f *fakePlatform) view(m *simMachine) platform.Machine {
	ev := make([]platform.Event, 0, len(m.events))
	for i := len(m.events) - 1; i >= 0; i-- {
		ev = append(ev, m.events[i])
	}
	ev = platform.TrimEvents(ev, f.capacity)
	for i := range ev {
		ev[i].Timestamp = ev[i].Timestamp.Add(f.skew)
		if ev[i].Exit != nil {
			x := *ev[i].Exit
			x.ExitedAt = x.ExitedAt.Add(f.skew)
			ev[i].Exit = &x
		}
	}
	out := platform.Machine{ID: m.id, Name: m.id, App: m.app, State: m.state, Config: m.cfg.Clone(), ImageRef: m.cfg.Image,
		InstanceID: fmt.Sprintf("%s-i%d", m.id, m.instance), Address: m.address, Events: ev,
		CreatedAt: m.created.Add(f.skew)}
	if f.giveRestartCount {
		out.RestartCount, out.HasRestartCount = m.rc, true
	}
	if f.giveStartedAt && m.state == platform.StateStarted {
		out.StartedAt = m.startedAt.Add(f.skew)
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
	if f.refuseUpdates > 0 {
		f.refuseUpdates--
		f.record("refused update %s %s", id, cfg.Image)
		return platform.Machine{}, fmt.Errorf("update %s: %w: HTTP 429", id, platform.ErrRateLimited)
	}
	now := f.clock.Now()
	f.record("update %s %s", id, cfg.Image)
	if f.updateLag > 0 {
		// The old process drains; the call gives up before it is done.
		m.state, m.nextAt, m.pending = platform.StateStopping, now.Add(f.updateLag), cfg.Clone()
		return platform.Machine{}, fmt.Errorf("update %s: %w: context deadline exceeded", id, platform.ErrTimeout)
	}
	f.stopProcess(m, now)
	f.applyUpdate(m, now, cfg)
	if f.updateErr != nil {
		return platform.Machine{}, f.updateErr
	}
	return f.view(m), nil
}

// onMachine runs op on machine id of app under the platform's lock, with
// the platform's time now; ErrNotFound (op not run) when there is no such
// machine, or it is destroyed.
func (f *fakePlatform) onMachine(app, id string, op func(m *simMachine, now time.Time)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.get(app, id)
	if err != nil {
		return err
	}
	op(m, f.clock.Now())
	return nil
}

func (f *fakePlatform) Start(_ context.Context, app, id string) error {
	return f.onMachine(app, id, func(m *simMachine, now time.Time) {
		if m.state == platform.StateStopped || m.state == platform.StateSuspended || m.state == platform.StateCreated {
			m.rc, m.runs = 0, 0
			f.boot(m, now, f.startDelay)
		}
		f.record("start %s", id)
	})
}

func (f *fakePlatform) Stop(_ context.Context, app, id string) error {
	return f.onMachine(app, id, func(m *simMachine, now time.Time) {
		f.stopProcess(m, now)
		f.record("stop %s", id)
	})
}

func (f *fakePlatform) Destroy(_ context.Context, app, id string) error {
	return f.onMachine(app, id, func(m *simMachine, now time.Time) {
		f.stopProcess(m, now)
		m.state = platform.StateDestroyed
		f.record("destroy %s %s", id, m.cfg.Image)
	})
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
		return m.state == platform.StateStarted && !m.beh.unhealthy && now.Sub(m.startedAt) >= m.beh.bootTime && (m.beh.status == 0 || m.beh.status/100 == 2)
	}
	return false
}

// statusAddr is what the machine at addr answers its health check now: 0
// for no answer (refused).
func (f *fakePlatform) statusAddr(addr string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.machines {
		if m.address != addr || m.state == platform.StateDestroyed {
			continue
		}
		now := f.clock.Now()
		f.advance(m, now)
		switch {
		case m.state != platform.StateStarted || m.beh.unhealthy:
			return 0
		case now.Sub(m.startedAt) < m.beh.bootTime:
			return m.beh.bootStatus
		case m.beh.status != 0:
			return m.beh.status
		}
		return 200
	}
	return 0
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

func (c fakeChecker) Check(_ context.Context, raw string) HealthResult {
	p := HealthResult{Ran: true, Target: raw}
	u, err := url.Parse(raw)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	status := 0
	if app, found := strings.CutSuffix(u.Hostname(), ".app.test"); found {
		if c.p.healthyApp(app) {
			status = 200
		}
	} else {
		status = c.p.statusAddr(u.Host)
	}
	switch {
	case status == 0:
		p.Error = "connection refused"
	default:
		p.Status, p.OK = status, status >= 200 && status < 300
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

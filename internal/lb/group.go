package lb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/valyala/fasthttp"
)

// Errors of the target group; the admin API maps them to HTTP statuses.
var (
	// ErrTargetNotFound: no target has this id (404).
	ErrTargetNotFound = errors.New("target not found")
	// ErrInvalidTarget: the id or the address is malformed (400).
	ErrInvalidTarget = errors.New("invalid target")
	// ErrTargetConflict: the id is registered with another address (409).
	ErrTargetConflict = errors.New("target registered with another address")
	// ErrClosed: the target group was closed.
	ErrClosed = errors.New("target group closed")
)

// Change is one state or reason change of one target, as notified to the
// group's OnChange.
type Change struct {
	// ID and Address name the target.
	ID, Address string
	// From and To are its health before and after.
	From, To Health
	// At is when the change happened (the group's clock).
	At time.Time
	// CutOff is how many requests were still in flight when the
	// deregistration delay ran out (draining → unused only).
	CutOff int64
}

// GroupDeps are what a TargetGroup needs from outside.
type GroupDeps struct {
	// Clock drives health check intervals and timeouts and the deregistration
	// delay. Default: the real clock.
	Clock clockwork.Clock
	// Logger receives background failures. Default: slog.Default().
	Logger *slog.Logger
	// HealthChecker runs health checks. Default: NewHTTPHealthChecker().
	HealthChecker HealthChecker
	// OnChange is called for every state or reason change, outside the group's
	// lock, from the goroutine that caused it, in the order the changes
	// happened. It must not call Register or Deregister. Optional.
	OnChange func(Change)
	// OnCheck is called for every finished health check, outside the lock.
	// Optional.
	OnCheck func(id string, r CheckResult)
	// OnFailOpen is called when the group starts (true) or stops (false)
	// failing open, outside the lock. Optional.
	OnFailOpen func(failOpen bool)
}

// TargetGroup is an ALB target group: registered targets, an active health
// check per target, the state of each, the rotation requests are routed to,
// and the drain of deregistered targets. It has no passive ejection: a target
// leaves rotation only through its health checks or deregistration, as in an
// ALB. Safe for concurrent use.
type TargetGroup struct {
	s    Settings
	deps GroupDeps
	bal  *balancer

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	notifyMu sync.Mutex // orders notifications; taken while holding mu, never the reverse

	mu       sync.Mutex
	targets  map[string]*Target
	order    []*Target         // registration order
	names    map[string]string // address → the id it was last registered under
	failOpen bool
	closed   bool
}

// NewTargetGroup returns an empty target group with settings s (which must be
// valid: see Settings.Validate). Close stops its goroutines.
func NewTargetGroup(s Settings, deps GroupDeps) *TargetGroup {
	if deps.Clock == nil {
		deps.Clock = clockwork.NewRealClock()
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.HealthChecker == nil {
		deps.HealthChecker = NewHTTPHealthChecker()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &TargetGroup{s: s, deps: deps, bal: newBalancer(s.Algorithm), ctx: ctx, cancel: cancel,
		targets: map[string]*Target{}, names: map[string]string{}}
}

// Register adds the target id at address in state initial and starts its
// health checks; the first runs at once. Registering a registered target with
// the same address changes nothing (as ALB RegisterTargets); registering a
// draining target makes it initial again, its in-flight requests untouched.
// Errors: ErrInvalidTarget, ErrTargetConflict, ErrClosed (wrapped).
func (g *TargetGroup) Register(id, address string) (TargetStatus, error) {
	if err := validTarget(id, address); err != nil {
		return TargetStatus{}, err
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return TargetStatus{}, ErrClosed
	}
	t, ok := g.targets[id]
	if ok && t.address != address {
		g.mu.Unlock()
		return TargetStatus{}, fmt.Errorf("%w: %s is registered at %s, not %s; deregister it first", ErrTargetConflict, id, t.address, address)
	}
	g.names[address] = id
	var p pending
	switch {
	case !ok:
		t = g.newTarget(id, address)
		g.targets[id] = t
		g.order = append(g.order, t)
		p.add(Change{ID: id, Address: address, At: g.deps.Clock.Now(),
			From: Health{State: StateUnused, Reason: ReasonNotRegistered, Description: describe(ReasonNotRegistered, 0)},
			To:   t.health})
		g.admitLocked(t)
		g.rebuildLocked(&p)
	case t.health.State == StateDraining:
		t.stopDrain()
		prev := t.health
		t.health, _ = Next(prev, Event{Kind: EventRegister}, g.s.Thresholds)
		t.nChecks = 0
		p.add(Change{ID: id, Address: address, At: g.deps.Clock.Now(), From: prev, To: t.health})
		g.admitLocked(t)
		g.rebuildLocked(&p)
	}
	st := t.status()
	g.unlockAndFlush(&p)
	return st, nil
}

// Deregister starts draining the target id: it leaves rotation at once, its
// in-flight requests may finish until the deregistration delay passes; then,
// or as soon as none is in flight, it becomes unused and is removed, as an ALB
// does. Deregistering a draining target changes nothing. Errors:
// ErrTargetNotFound (wrapped), ErrClosed.
func (g *TargetGroup) Deregister(id string) (TargetStatus, error) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return TargetStatus{}, ErrClosed
	}
	t, ok := g.targets[id]
	if !ok {
		g.mu.Unlock()
		return TargetStatus{}, fmt.Errorf("%w: %q", ErrTargetNotFound, id)
	}
	var p pending
	if t.health.State != StateDraining {
		prev := t.health
		t.health, _ = Next(prev, Event{Kind: EventDeregister}, g.s.Thresholds)
		p.add(Change{ID: id, Address: t.address, At: g.deps.Clock.Now(), From: prev, To: t.health})
		t.stopChecks()
		// Publish the rotation without t before closing admission, so a request
		// that backs off from t picks again from a rotation without it.
		g.rebuildLocked(&p)
		t.admitted.Store(false)
		ctx, cancel := context.WithCancel(g.ctx)
		t.stopDrain = cancel
		// The delay counts from now, not from when the goroutine runs.
		timer := g.deps.Clock.NewTimer(g.s.DeregistrationDelay)
		gen := t.gen
		g.wg.Add(1)
		go g.drain(ctx, t, gen, timer)
	}
	st := t.status()
	g.unlockAndFlush(&p)
	return st, nil
}

// Targets returns the status of every target still known (registered or
// draining), in registration order.
func (g *TargetGroup) Targets() []TargetStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]TargetStatus, 0, len(g.order))
	for _, t := range g.order {
		out = append(out, t.status())
	}
	return out
}

// Target returns the status of target id, or ErrTargetNotFound (wrapped) when
// it is not registered nor draining.
func (g *TargetGroup) Target(id string) (TargetStatus, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, ok := g.targets[id]
	if !ok {
		return TargetStatus{}, fmt.Errorf("%w: %q", ErrTargetNotFound, id)
	}
	return t.status(), nil
}

// FailingOpen reports whether no target is healthy and requests go to every
// registered target.
func (g *TargetGroup) FailingOpen() bool {
	return g.bal.cur.Load().failOpen
}

// Settings returns the target group's current settings.
func (g *TargetGroup) Settings() Settings {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.s
}

// Modify changes the target group's health check (path, interval, timeout,
// thresholds), deregistration delay and algorithm while it serves, as ALB
// ModifyTargetGroup and ModifyTargetGroupAttributes do; the other fields of s
// are ignored (the listener's idle and connect timeouts and the body limit are
// fixed at start). Registered targets keep their state and consecutive counts;
// their next check runs at once with the new settings. A target already
// draining keeps the delay it started with. Errors: Settings.Validate's.
func (g *TargetGroup) Modify(s Settings) error {
	g.mu.Lock()
	next := g.s
	next.HealthCheckPath, next.HealthCheckInterval, next.HealthCheckTimeout = s.HealthCheckPath, s.HealthCheckInterval, s.HealthCheckTimeout
	next.Thresholds, next.DeregistrationDelay, next.Algorithm = s.Thresholds, s.DeregistrationDelay, s.Algorithm
	if err := next.Validate(); err != nil {
		g.mu.Unlock()
		return err
	}
	if g.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	checksChanged := next.HealthCheckPath != g.s.HealthCheckPath || next.HealthCheckInterval != g.s.HealthCheckInterval ||
		next.HealthCheckTimeout != g.s.HealthCheckTimeout
	g.s = next
	g.bal.algo.Store(uint32(next.Algorithm))
	if checksChanged {
		for _, t := range g.order {
			if t.admitted.Load() {
				t.stopChecks()
				g.startChecksLocked(t)
			}
		}
	}
	g.mu.Unlock()
	return nil
}

// IDOf returns the id address was last registered under, or "" when it
// never was: the ELBv2 API names targets by address, the admin API by id.
func (g *TargetGroup) IDOf(address string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.names[address]
}

// Close stops every health check and drain and closes backend connections.
// Requests still running fail. Close is idempotent.
func (g *TargetGroup) Close() {
	g.mu.Lock()
	g.closed = true
	g.cancel()
	targets := slices.Clone(g.order)
	g.mu.Unlock()
	g.wg.Wait()
	for _, t := range targets {
		t.conns.closeAll()
	}
}

// acquire picks a target in rotation and counts a request in flight on it;
// the caller must call release on it. nil means no target is in rotation. A
// target deregistered between the pick and the count is given back and the
// pick retried, so a draining target never takes a new request. Hot path: no
// lock, no allocation.
func (g *TargetGroup) acquire() *Target {
	for range 4 {
		t := g.bal.pick()
		if t == nil {
			return nil
		}
		t.inFlight.Add(1)
		if t.admitted.Load() {
			t.requests.Add(1)
			return t
		}
		t.release()
	}
	return nil
}

func (g *TargetGroup) newTarget(id, address string) *Target {
	conns := newConnSet()
	t := &Target{
		id: id, address: address, conns: conns,
		idle:   make(chan struct{}, 1),
		health: NewHealth(),
		client: &fasthttp.HostClient{
			Addr:                          address,
			DialTimeout:                   conns.dialer(g.s.ConnectTimeout),
			MaxConns:                      1 << 20, // an ALB does not cap connections per target
			MaxIdleConnDuration:           g.s.IdleTimeout,
			MaxIdemponentCallAttempts:     1, // an ALB does not retry: that is how real 502s appear
			RetryIfErr:                    func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
			ReadBufferSize:                16 << 10,
			MaxResponseBodySize:           g.s.MaxBodySize,
			DisableHeaderNamesNormalizing: true,
			DisablePathNormalizing:        true,
			NoDefaultUserAgentHeader:      true,
			ConnPoolStrategy:              fasthttp.LIFO,
		},
	}
	return t
}

// admitLocked opens t to requests and starts its health checks under a new
// generation. Caller holds g.mu.
func (g *TargetGroup) admitLocked(t *Target) {
	t.gen++
	t.cut.Store(false)
	t.admitted.Store(true)
	g.startChecksLocked(t)
}

// startChecksLocked starts t's health checks under its current generation,
// with the group's current settings. Caller holds g.mu.
func (g *TargetGroup) startChecksLocked(t *Target) {
	ctx, cancel := context.WithCancel(g.ctx)
	t.stopChecks = cancel
	gen := t.gen
	c := &checker{
		clock: g.deps.Clock, log: g.deps.Logger, hc: g.deps.HealthChecker,
		address: t.address, path: g.s.HealthCheckPath,
		interval: g.s.HealthCheckInterval, timeout: g.s.HealthCheckTimeout,
		report: func(r CheckResult) { g.report(t, gen, r) },
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer g.recoverLoop("health checks", t.id)
		c.run(ctx)
	}()
}

// report applies one finished health check of t.
func (g *TargetGroup) report(t *Target, gen uint64, r CheckResult) {
	g.mu.Lock()
	if t.gen != gen || !t.admitted.Load() {
		g.mu.Unlock()
		return // a check of an earlier registration
	}
	t.addCheck(r)
	prev := t.health
	next, changed := Next(prev, Event{Kind: EventCheck, Check: r}, g.s.Thresholds)
	t.health = next
	var p pending
	if changed {
		p.add(Change{ID: t.id, Address: t.address, At: g.deps.Clock.Now(), From: prev, To: next})
		if prev.State != next.State {
			g.rebuildLocked(&p)
		}
	}
	p.check, p.checkID = &r, t.id
	g.unlockAndFlush(&p)
}

// drain waits until t has no request in flight or the deregistration delay
// passes, then completes its deregistration.
func (g *TargetGroup) drain(ctx context.Context, t *Target, gen uint64, timer clockwork.Timer) {
	defer g.wg.Done()
	defer g.recoverLoop("drain", t.id)
	defer timer.Stop()
	for t.inFlight.Load() > 0 {
		select {
		case <-t.idle:
		case <-timer.Chan():
			g.finishDrain(t, gen, true)
			return
		case <-ctx.Done():
			return
		}
	}
	g.finishDrain(t, gen, false)
}

// finishDrain makes t unused and removes it. When the delay ran out with
// requests in flight (delayPassed), they are cut off: their connections close.
func (g *TargetGroup) finishDrain(t *Target, gen uint64, delayPassed bool) {
	g.mu.Lock()
	if t.gen != gen || t.health.State != StateDraining || g.targets[t.id] != t {
		g.mu.Unlock()
		return // registered again meanwhile
	}
	var cutOff int64
	if delayPassed {
		cutOff = t.inFlight.Load()
		t.cut.Store(cutOff > 0)
	}
	prev := t.health
	t.health, _ = Next(prev, Event{Kind: EventDrained}, g.s.Thresholds)
	delete(g.targets, t.id)
	g.order = slices.DeleteFunc(g.order, func(x *Target) bool { return x == t })
	var p pending
	p.add(Change{ID: t.id, Address: t.address, At: g.deps.Clock.Now(), From: prev, To: t.health, CutOff: cutOff})
	g.rebuildLocked(&p)
	t.conns.closeAll()
	g.unlockAndFlush(&p)
}

// rebuildLocked recomputes the rotation from the targets' states and
// publishes it; a switch into or out of fail-open is recorded in p. Caller
// holds g.mu.
func (g *TargetGroup) rebuildLocked(p *pending) {
	states := make([]State, len(g.order))
	for i, t := range g.order {
		states[i] = t.health.State
		t.inRotation = false
	}
	in, failOpen := rotationOf(states)
	r := &rotation{targets: make([]*Target, 0, len(in)), failOpen: failOpen}
	for _, i := range in {
		g.order[i].inRotation = true
		r.targets = append(r.targets, g.order[i])
	}
	g.bal.cur.Store(r)
	if failOpen != g.failOpen {
		g.failOpen = failOpen
		p.failOpenSwitched, p.failOpen = true, failOpen
	}
}

// pending holds the notifications gathered under the lock, delivered after it.
type pending struct {
	changes          []Change
	failOpenSwitched bool
	failOpen         bool
	check            *CheckResult
	checkID          string
}

func (p *pending) add(c Change) { p.changes = append(p.changes, c) }

// unlockAndFlush releases g.mu and delivers p's notifications outside it, in
// the order the changes happened: notifyMu is taken before g.mu is released,
// so two deliveries never overtake each other. Callbacks must therefore not
// call Register or Deregister.
func (g *TargetGroup) unlockAndFlush(p *pending) {
	g.notifyMu.Lock()
	defer g.notifyMu.Unlock()
	g.mu.Unlock()
	if p.check != nil && g.deps.OnCheck != nil {
		g.deps.OnCheck(p.checkID, *p.check)
	}
	if g.deps.OnChange != nil {
		for _, c := range p.changes {
			g.deps.OnChange(c)
		}
	}
	if p.failOpenSwitched && g.deps.OnFailOpen != nil {
		g.deps.OnFailOpen(p.failOpen)
	}
}

// recoverLoop logs a panic of a background loop instead of crashing the LB.
func (g *TargetGroup) recoverLoop(loop, id string) {
	if p := recover(); p != nil {
		g.deps.Logger.Error("lb background loop panicked", "loop", loop, "target", id, "panic", p)
	}
}

// validTarget checks a target's id and address.
func validTarget(id, address string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("%w: id must be 1 to 128 characters, got %q", ErrInvalidTarget, id)
	}
	for _, r := range id {
		if r == '/' || r < ' ' || r == 0x7f {
			return fmt.Errorf("%w: id %q must not contain '/' or control characters", ErrInvalidTarget, id)
		}
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil || host == "" {
		return fmt.Errorf("%w: address must be host:port like 127.0.0.1:9101, got %q", ErrInvalidTarget, address)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%w: address %q needs a port from 1 to 65535", ErrInvalidTarget, address)
	}
	return nil
}

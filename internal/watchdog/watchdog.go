package watchdog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/flocks"
	"github.com/mythex/mythex/internal/runtime"
)

// Definitions gives the host's current published definition. It is read
// only on purpose: the watchdog cannot write a definition. *definition.Store
// implements it; Current returns definition.ErrNotFound (wrapped) when
// nothing has been published yet.
type Definitions interface {
	Current() (*definition.Definition, error)
}

// Runtime is the part of runtime.Runtime the watchdog uses: it looks
// (Status) and heals (Stop, Start). Every runtime.Runtime implements it.
type Runtime interface {
	Status(ctx context.Context) ([]runtime.ServiceStatus, error)
	Start(ctx context.Context, svc definition.Service) error
	Stop(ctx context.Context, name string, grace time.Duration) (runtime.StopResult, error)
}

// Locker is the host lock (*hostlock.Lock). TryLock must not block and must
// fail with an error wrapping a *flocks.HeldError, naming the holder, when
// someone else holds the lock.
type Locker interface {
	TryLock(holder string) error
	Unlock() error
}

// Config configures a Watchdog. Definitions, Runtime, Lock and StateDir are
// required.
type Config struct {
	// Definitions gives the current published definition (the agent's
	// *definition.Store).
	Definitions Definitions
	// Runtime runs the services.
	Runtime Runtime
	// Lock is the host lock, shared with deploy leases and the bootstrap.
	Lock Locker
	// StateDir is the agent's state directory; the maintenance window is kept
	// in StateDir/watchdog-maintenance.json.
	StateDir string
	// Policy is W, K and the crash-loop backoff; zero fields take their
	// defaults (Policy.WithDefaults).
	Policy Policy
	// Holder is the name the watchdog holds the host lock under, shown to a
	// deploy that finds it held. Default "watchdog".
	Holder string
	// Clock paces rounds and stamps decisions. Default the real clock.
	Clock clockwork.Clock
	// Logger receives one structured line per decision that matters (skip,
	// strike, drift, heal, backoff, recovery). Default: discarded.
	Logger *slog.Logger
	// Registry receives the watchdog's Prometheus metrics. Default: a new,
	// unexposed registry.
	Registry prometheus.Registerer
}

// Watchdog is one host's watchdog. Create it with New, start its loop with
// Start, stop it with Close. Its methods are safe for concurrent use.
type Watchdog struct {
	defs   Definitions
	rt     Runtime
	lock   Locker
	policy Policy
	holder string
	clock  clockwork.Clock
	log    *slog.Logger
	m      *metrics

	maintPath string

	// roundMu makes rounds one at a time (the loop's, and tests driving
	// runOnce directly).
	roundMu sync.Mutex

	mu      sync.Mutex
	records map[string]Record
	order   []string // service names of the definition last seen, in its order
	maint   *Maintenance
	last    Round
	running bool

	ctx     context.Context
	cancel  context.CancelFunc
	started sync.Once
	done    chan struct{}
}

// New returns a watchdog; its loop runs after Start. It loads the
// maintenance window a previous agent left. Errors: a missing required
// field or a bad policy (ErrInvalid), an unreadable maintenance file
// (ErrMaintenanceFile).
func New(cfg Config) (*Watchdog, error) {
	if cfg.Definitions == nil || cfg.Runtime == nil || cfg.Lock == nil || cfg.StateDir == "" {
		return nil, fmt.Errorf("%w: Definitions, Runtime, Lock and StateDir are required", ErrInvalid)
	}
	p := cfg.Policy.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if cfg.Holder == "" {
		cfg.Holder = "watchdog"
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	path := filepath.Join(cfg.StateDir, MaintenanceFile)
	maint, err := loadMaintenance(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watchdog{
		defs: cfg.Definitions, rt: cfg.Runtime, lock: cfg.Lock, policy: p, holder: cfg.Holder,
		clock: cfg.Clock, log: cfg.Logger.With("component", "watchdog"), m: newMetrics(cfg.Registry),
		maintPath: path, records: map[string]Record{}, maint: maint,
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
	}
	w.m.maintenance.Set(boolGauge(maint.Active(w.clock.Now())))
	if maint.Active(w.clock.Now()) {
		w.log.Info("maintenance mode carried over from before the restart", "until", maint.Until, "reason", maint.Reason, "by", maint.By)
	}
	return w, nil
}

// Policy returns the policy in force, defaults applied.
func (w *Watchdog) Policy() Policy { return w.policy }

// Start runs the loop: a round every Policy.Interval, the first one
// interval after Start (services the agent or the bootstrap just started get
// that long before they are looked at). Calling Start again does nothing.
func (w *Watchdog) Start() {
	w.started.Do(func() {
		w.mu.Lock()
		w.running = true
		w.mu.Unlock()
		go w.loop()
	})
}

// Close stops the loop and waits for a round in progress to end (its heals
// see their context cancelled). Services keep running. Close is idempotent.
func (w *Watchdog) Close() error {
	w.cancel()
	w.started.Do(func() { close(w.done) }) // never started: nothing to wait for
	<-w.done
	w.mu.Lock()
	w.running = false
	w.mu.Unlock()
	return nil
}

// loop is the watchdog's one goroutine: it only calls runOnce.
func (w *Watchdog) loop() {
	defer close(w.done)
	t := w.clock.NewTicker(w.policy.Interval)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.Chan():
			w.safeRound(w.ctx)
		}
	}
}

// safeRound runs one round and turns a panic into a logged error round, so
// one bad round never ends the loop.
func (w *Watchdog) safeRound(ctx context.Context) {
	defer func() {
		if r := recover(); r != nil {
			w.log.Error("watchdog round panicked", "panic", r)
			w.m.rounds.WithLabelValues(roundError, "panic").Inc()
		}
	}()
	w.runOnce(ctx)
}

// RoundResult is how a round ended.
type RoundResult string

// Round results.
const (
	// RoundChecked: the watchdog held the host lock and decided for every
	// service (heals included).
	RoundChecked RoundResult = "checked"
	// RoundSkippedLocked: someone else held the host lock.
	RoundSkippedLocked RoundResult = "skipped: host lock held"
	// RoundSkippedMaintenance: maintenance mode was on.
	RoundSkippedMaintenance RoundResult = "skipped: maintenance"
	// RoundNoDefinition: nothing has been published to the host yet.
	RoundNoDefinition RoundResult = "no definition published"
	// RoundError: the round could not look (definition store, runtime or
	// lock failed); nothing was counted.
	RoundError RoundResult = "error"
)

// Round is what one round did.
type Round struct {
	// At is when it began.
	At time.Time
	// Result is how it ended.
	Result RoundResult
	// Detail says more: who held the lock (its holder name, e.g. "deploy:
	// v3 by ci"), the maintenance reason, the error.
	Detail string
	// Version is the current definition's version ("" without one).
	Version string
	// Services are the decisions, in the definition's order.
	Services []ServiceDecision
}

// ServiceDecision is one service's decision in a round, and, for a heal, how
// the heal went.
type ServiceDecision struct {
	// Name is the service.
	Name string
	// Decision is what Decide decided.
	Decision Decision
	// HealErr is why the heal failed; nil when there was no heal or it
	// worked.
	HealErr error
}

// Summary is a one-line account of the round, for status.
func (r Round) Summary() string {
	switch {
	case r.Result == RoundSkippedLocked:
		return string(r.Result) + " by " + r.Detail
	case r.Result != RoundChecked && r.Detail == "":
		return string(r.Result)
	case r.Result != RoundChecked:
		return string(r.Result) + ": " + r.Detail
	}
	counts := map[Kind]int{}
	for _, s := range r.Services {
		counts[s.Decision.Kind]++
	}
	parts := []string{}
	for _, k := range []Kind{KindOK, KindWait, KindStrike, KindDrift, KindHeal, KindBackoff} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	return fmt.Sprintf("checked %d services of %s: %s", len(r.Services), r.Version, strings.Join(parts, ", "))
}

// runOnce is one round: maintenance → host lock (without blocking) → the
// current definition → the runtime's status → Decide per service → heals →
// records, status, logs and metrics → release the lock. Tests drive it
// directly; the loop only calls it.
func (w *Watchdog) runOnce(ctx context.Context) Round {
	w.roundMu.Lock()
	defer w.roundMu.Unlock()
	now := w.clock.Now()
	round := Round{At: now}
	maint := w.currentMaintenance(now)

	lockedBy := ""
	if maint == nil {
		err := w.lock.TryLock(w.holder)
		var held *flocks.HeldError
		switch {
		case errors.As(err, &held):
			lockedBy = held.Holder
		case errors.Is(err, flocks.ErrHeld):
			lockedBy = err.Error() // held, by someone who did not say
		case err != nil:
			return w.finishError(round, "lock", fmt.Errorf("host lock: %w", err))
		default:
			defer func() {
				if err := w.lock.Unlock(); err != nil {
					w.log.Error("release host lock", "err", err)
				}
			}()
		}
	}

	def, err := w.defs.Current()
	if errors.Is(err, definition.ErrNotFound) {
		round.Result = RoundNoDefinition
		w.m.rounds.WithLabelValues(roundSkipped, "no-definition").Inc()
		w.finish(round, nil, nil)
		return round
	}
	if err != nil {
		return w.finishError(round, "definition", fmt.Errorf("current definition: %w", err))
	}
	round.Version = def.Version

	var statuses []runtime.ServiceStatus
	if lockedBy == "" {
		statuses, err = w.rt.Status(ctx)
		if err != nil {
			return w.finishError(round, "runtime", fmt.Errorf("runtime status: %w", err))
		}
	}

	w.mu.Lock()
	prev := make(map[string]Record, len(def.Services))
	for _, svc := range def.Services {
		prev[svc.Name] = w.records[svc.Name]
	}
	w.mu.Unlock()

	next := make(map[string]Record, len(def.Services))
	round.Services = make([]ServiceDecision, len(def.Services))
	for i, svc := range def.Services {
		rec, d := Decide(prev[svc.Name], Observation{
			Now: now, Service: svc, Instances: statuses, LockHeldBy: lockedBy, Maintenance: maint,
		}, w.policy)
		next[svc.Name] = rec
		round.Services[i] = ServiceDecision{Name: svc.Name, Decision: d}
	}

	switch {
	case maint != nil:
		round.Result = RoundSkippedMaintenance
		round.Detail = fmt.Sprintf("%s (by %s) until %s", maint.Reason, orSomeone(maint.By), maint.Until.Format(time.RFC3339))
		w.m.rounds.WithLabelValues(roundSkipped, string(CauseMaintenance)).Inc()
		w.log.Info("watchdog round skipped: maintenance", "decision", KindSkipMaintenance.String(), "reason", CauseMaintenance,
			"maintenance_reason", maint.Reason, "by", maint.By, "until", maint.Until)
	case lockedBy != "":
		round.Result, round.Detail = RoundSkippedLocked, lockedBy
		w.m.rounds.WithLabelValues(roundSkipped, string(CauseLockHeld)).Inc()
		w.log.Info("watchdog round skipped: host lock held", "decision", KindSkipLocked.String(), "reason", CauseLockHeld, "holder", lockedBy)
	default:
		round.Result = RoundChecked
		w.m.rounds.WithLabelValues(roundChecked, "").Inc()
		w.heal(ctx, def, round.Services, next)
	}
	w.finish(round, def, next)
	for _, sd := range round.Services {
		w.report(prev[sd.Name], next[sd.Name], sd)
	}
	return round
}

// heal applies the heal decisions of a round, in parallel (a stop may take a
// service's whole grace period), and records failures in next.
func (w *Watchdog) heal(ctx context.Context, def *definition.Definition, sds []ServiceDecision, next map[string]Record) {
	var wg sync.WaitGroup
	for i := range sds {
		sd := &sds[i]
		if sd.Decision.Kind != KindHeal {
			continue
		}
		svc, _ := def.Service(sd.Name)
		w.log.Warn("watchdog heal", "service", sd.Name, "decision", KindHeal.String(), "reason", sd.Decision.Cause,
			"strike", sd.Decision.Strike, "of", sd.Decision.Of, "detail", sd.Decision.Detail,
			"heals_in_row", next[sd.Name].HealsInRow, "version", svc.Version)
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					sd.HealErr = fmt.Errorf("heal panicked: %v", r)
				}
			}()
			sd.HealErr = w.healOne(ctx, svc, sd.Decision.StopFirst)
		})
	}
	wg.Wait()
	for _, sd := range sds {
		if sd.Decision.Kind != KindHeal {
			continue
		}
		if sd.HealErr != nil {
			next[sd.Name] = next[sd.Name].HealFailed(sd.HealErr)
			w.m.heals.WithLabelValues(sd.Name, "error").Inc()
			w.log.Error("watchdog heal failed", "service", sd.Name, "err", sd.HealErr)
			continue
		}
		w.m.heals.WithLabelValues(sd.Name, "ok").Inc()
		w.log.Info("watchdog healed", "service", sd.Name, "version", def.Version)
	}
}

// healOne starts svc from the definition, stopping what runs under its name
// first when stopFirst (within the instance's own stop grace period). If
// another instance turned up meanwhile (ErrConflict) it is stopped and the
// start tried once more.
func (w *Watchdog) healOne(ctx context.Context, svc definition.Service, stopFirst bool) error {
	if stopFirst {
		if _, err := w.rt.Stop(ctx, svc.Name, runtime.UseSpecGrace); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			return fmt.Errorf("stop %s: %w", svc.Name, err)
		}
	}
	err := w.rt.Start(ctx, svc)
	if errors.Is(err, runtime.ErrConflict) {
		if _, serr := w.rt.Stop(ctx, svc.Name, runtime.UseSpecGrace); serr != nil {
			return fmt.Errorf("stop the other instance of %s: %w", svc.Name, serr)
		}
		err = w.rt.Start(ctx, svc)
	}
	if err != nil {
		return fmt.Errorf("start %s (version %s): %w", svc.Name, svc.Version, err)
	}
	return nil
}

// finishError ends a round that could not look.
func (w *Watchdog) finishError(round Round, reason string, err error) Round {
	round.Result, round.Detail = RoundError, err.Error()
	w.m.rounds.WithLabelValues(roundError, reason).Inc()
	w.log.Error("watchdog round failed", "err", err)
	w.finish(round, nil, nil)
	return round
}

// finish stores the round and, with a definition, the new records (dropping
// services no longer in it), and updates the gauges.
func (w *Watchdog) finish(round Round, def *definition.Definition, next map[string]Record) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = round
	if def == nil {
		return
	}
	for name := range w.records {
		if _, ok := next[name]; !ok {
			delete(w.records, name)
			w.m.forget(name)
		}
	}
	w.order = w.order[:0]
	for _, svc := range def.Services {
		rec := next[svc.Name]
		w.records[svc.Name] = rec
		w.order = append(w.order, svc.Name)
		w.m.strikes.WithLabelValues(svc.Name).Set(float64(rec.Strikes))
		w.m.crashLoop.WithLabelValues(svc.Name).Set(boolGauge(rec.State == StateCrashLooping))
	}
}

// report logs one service's decision and counts it. Strikes, drift, heals
// and backoffs are logged every time; ok and wait only when the state
// changes, so a healthy host logs nothing.
func (w *Watchdog) report(prev, rec Record, sd ServiceDecision) {
	d := sd.Decision
	w.m.decisions.WithLabelValues(d.Kind.String(), string(d.Cause)).Inc()
	attrs := []any{"service", sd.Name, "decision", d.Kind.String(), "reason", d.Cause}
	switch d.Kind {
	case KindStrike, KindDrift:
		w.log.Warn("watchdog "+d.Kind.String(), append(attrs, "strike", d.Strike, "of", d.Of, "detail", d.Detail)...)
	case KindBackoff:
		w.log.Warn("watchdog backoff: crash-looping", append(attrs, "strike", d.Strike, "of", d.Of,
			"heals_in_row", rec.HealsInRow, "next_heal", d.NextHeal, "detail", d.Detail)...)
	case KindOK:
		if prev.State != StateOK && prev.State != "" && prev.State != StateUnknown {
			w.log.Info("watchdog: service is healthy again", append(attrs, "was", prev.State)...)
		}
	case KindWait:
		if prev.State != rec.State {
			w.log.Info("watchdog wait", append(attrs, "strike", d.Strike, "of", d.Of, "detail", d.Detail)...)
		}
	}
}

// currentMaintenance returns the active maintenance window, ending an
// expired one (its file is removed) on the way.
func (w *Watchdog) currentMaintenance(now time.Time) *Maintenance {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.maint == nil {
		return nil
	}
	if w.maint.Active(now) {
		m := *w.maint
		return &m
	}
	expired := *w.maint
	if err := clearMaintenance(w.maintPath); err != nil {
		w.log.Error("maintenance expired but its file could not be removed", "err", err)
	}
	w.maint = nil
	w.m.maintenance.Set(0)
	w.log.Info("maintenance mode expired; healing resumes", "reason", expired.Reason, "by", expired.By, "until", expired.Until)
	return nil
}

// SetMaintenance pauses healing for d from now, with a reason and who asked,
// and keeps the window in the state directory so that it survives an agent
// restart. A window already on is replaced. Errors: ErrInvalid (bad d or
// reason; nothing changed), a write error (nothing changed).
func (w *Watchdog) SetMaintenance(d time.Duration, reason, by string) (Maintenance, error) {
	m, err := NewMaintenance(w.clock.Now(), d, reason, by)
	if err != nil {
		return Maintenance{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := saveMaintenance(w.maintPath, m); err != nil {
		return Maintenance{}, err
	}
	w.maint = &m
	w.m.maintenance.Set(1)
	w.log.Warn("maintenance mode on: healing paused", "reason", m.Reason, "by", m.By, "until", m.Until)
	return m, nil
}

// EndMaintenance ends maintenance now and returns the window it ended; nil
// (and no error) when none was on.
func (w *Watchdog) EndMaintenance(by string) (*Maintenance, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := clearMaintenance(w.maintPath); err != nil {
		return nil, err
	}
	ended := w.maint
	w.maint = nil
	w.m.maintenance.Set(0)
	if ended.Active(w.clock.Now()) {
		w.log.Info("maintenance mode off: healing resumes", "reason", ended.Reason, "ended_by", by)
		return ended, nil
	}
	return nil, nil
}

// Maintenance returns the active maintenance window; nil when healing is
// not paused.
func (w *Watchdog) Maintenance() *Maintenance {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.maint.Active(w.clock.Now()) {
		return nil
	}
	m := *w.maint
	return &m
}

func orSomeone(s string) string {
	if s == "" {
		return "someone"
	}
	return s
}

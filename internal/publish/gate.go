package publish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/flocks"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/platform"
)

// Options are the gate's timings. Zero fields take the defaults of
// DefaultOptions, which suit real platforms (Fly, Docker); tests scale them
// down.
type Options struct {
	// LookInterval is the delay between looks once the machines read started
	// (look 2 after look 1, look 3 after look 2). Default 5s.
	LookInterval time.Duration
	// PollInterval is the delay between looks while a machine has not read
	// started yet. Default 1s.
	PollInterval time.Duration
	// StableFor is how long a machine must stay up after its latest start or
	// crash before it can be live (Nomad's min_healthy_time). Default 30s —
	// longer than flyctl's 10 s smoke window, so a crash 12 s after start is
	// caught by the gate itself.
	StableFor time.Duration
	// Window bounds the whole judgement: at its end anything open resolves
	// (never started or never healthy is failed; missing evidence is
	// unknown). Default 5m.
	Window time.Duration
	// SwitchTimeout bounds waiting for the router to put new machines in
	// rotation (blue-green) and to drain the old ones. Default 2m.
	SwitchTimeout time.Duration
	// RestoreTimeout bounds a rollback: the restored release's machines must
	// be started and healthy within it. Default 2m.
	RestoreTimeout time.Duration
	// CallTimeout bounds one platform API call. Default 45s: an update of
	// the local platform's machine returns once the old process has stopped
	// (its --stop-timeout defaults to 30s, and an app draining gracefully
	// takes its drain period), so a shorter bound would cut healthy updates
	// off. A call that still does not answer is a control-plane error: the
	// release is judged by what the machines run, never failed by it.
	CallTimeout time.Duration
	// ReconcileWindow bounds one reconciler check of a live release. Default
	// 3 × LookInterval.
	ReconcileWindow time.Duration
	// StartPeriod is how long after a machine is first seen started its
	// wrong health answers are not counted (compose's start_period). Default
	// 10s.
	StartPeriod time.Duration
	// UnhealthyThreshold is how many looks in a row after the start period
	// a started machine may answer its health check wrongly (a status
	// outside 2xx other than 502/503/504) before it is failed. Default 3: at
	// 5 s looks, a machine answering 500 from boot is failed ~20 s after
	// it started. Refusals, timeouts and 502/503/504 never count (a slow
	// boot still goes live); negative waits for the window's end.
	UnhealthyThreshold int
	// LoopWindow: a crash less than this after the previous one (on the
	// platform's clock) is a crash loop; one after a longer quiet spell is a
	// warning. At least StableFor. Default 1m — two reconcile rounds at the
	// suggested --every 30s, so one crash per round is a loop while two
	// single kills minutes apart are not.
	LoopWindow time.Duration
}

// DefaultOptions are the defaults for real platforms.
var DefaultOptions = Options{
	LookInterval:       5 * time.Second,
	PollInterval:       time.Second,
	StableFor:          30 * time.Second,
	Window:             5 * time.Minute,
	SwitchTimeout:      2 * time.Minute,
	RestoreTimeout:     2 * time.Minute,
	CallTimeout:        45 * time.Second,
	StartPeriod:        10 * time.Second,
	UnhealthyThreshold: 3,
	LoopWindow:         time.Minute,
}

// withDefaults fills zero fields from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&o.LookInterval, d.LookInterval)
	set(&o.PollInterval, d.PollInterval)
	if o.StableFor < 0 {
		o.StableFor = 0
	} else if o.StableFor == 0 {
		o.StableFor = d.StableFor
	}
	set(&o.Window, d.Window)
	set(&o.SwitchTimeout, d.SwitchTimeout)
	set(&o.RestoreTimeout, d.RestoreTimeout)
	set(&o.CallTimeout, d.CallTimeout)
	set(&o.ReconcileWindow, 3*o.LookInterval)
	if o.StartPeriod < 0 {
		o.StartPeriod = 0
	} else if o.StartPeriod == 0 {
		o.StartPeriod = d.StartPeriod
	}
	if o.UnhealthyThreshold < 0 {
		o.UnhealthyThreshold = 0
	} else if o.UnhealthyThreshold == 0 {
		o.UnhealthyThreshold = d.UnhealthyThreshold
	}
	set(&o.LoopWindow, d.LoopWindow)
	return o
}

// policy is the judge's policy from the options.
func (o Options) policy() Policy {
	return Policy{StableFor: o.StableFor, LookInterval: o.LookInterval, PollInterval: o.PollInterval,
		StartPeriod: o.StartPeriod, UnhealthyThreshold: o.UnhealthyThreshold, LoopWindow: o.LoopWindow}
}

// Validate returns an ErrInvalid error naming a negative or inconsistent
// timing.
func (o Options) Validate() error {
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"look-interval", o.LookInterval}, {"poll-interval", o.PollInterval}, {"window", o.Window},
		{"switch-timeout", o.SwitchTimeout}, {"restore-timeout", o.RestoreTimeout}, {"call-timeout", o.CallTimeout}} {
		if f.v < 0 {
			return fmt.Errorf("%w: %s is %s; give a positive duration such as 5s", ErrInvalid, f.name, f.v)
		}
	}
	o = o.withDefaults()
	if o.Window < 2*o.LookInterval {
		return fmt.Errorf("%w: window %s is shorter than two look intervals (%s): the gate could not look twice; raise --window or lower --look-interval",
			ErrInvalid, o.Window, 2*o.LookInterval)
	}
	return nil
}

// ErrInvalid marks bad input to the gate (flags, config): nothing was
// changed. The CLI maps it to exit code 2.
var ErrInvalid = errors.New("invalid publish request")

// ErrBusy is returned when another publish or reconcile of the same app holds
// its lock.
var ErrBusy = errors.New("another publish or reconcile of this app is running")

// Gate publishes releases onto a platform and judges them (Judge;
// docs/publish.md).
type Gate struct {
	p        platform.Platform
	store    *Store
	checker  Checker
	router   lbport.Driver
	clock    clockwork.Clock
	log      *slog.Logger
	opts     Options
	lockDir  string
	observer func(Event)

	leaseMu sync.Mutex
	leased  map[string]map[string]bool // app -> machines whose lease the gate holds
}

// GateConfig carries a Gate's dependencies.
type GateConfig struct {
	// Platform runs the machines. Required.
	Platform platform.Platform
	// Store keeps releases. Required.
	Store *Store
	// Checker makes health checks; nil uses HTTPChecker{}.
	Checker Checker
	// Router, when set, makes publishes blue-green through this load
	// balancer (machine id and address as the target); nil publishes in
	// place.
	Router lbport.Driver
	// Clock is the time source; nil uses the real clock.
	Clock clockwork.Clock
	// Logger logs; nil discards.
	Logger *slog.Logger
	// Options are the timings.
	Options Options
	// LockDir holds one lock file per app (publish-<app>.lock) so a publish
	// and the reconciler never act on an app at once. Required.
	LockDir string
	// Observer, when set, receives progress events (each look, each step).
	Observer func(Event)
}

// NewGate returns a gate. It returns an ErrInvalid error when a required
// dependency is missing or the options are inconsistent.
func NewGate(c GateConfig) (*Gate, error) {
	if c.Platform == nil || c.Store == nil || c.LockDir == "" {
		return nil, fmt.Errorf("%w: the gate needs a platform, a store and a lock dir", ErrInvalid)
	}
	if err := c.Options.Validate(); err != nil {
		return nil, err
	}
	g := &Gate{p: c.Platform, store: c.Store, checker: c.Checker, router: c.Router, clock: c.Clock, log: c.Logger,
		opts: c.Options.withDefaults(), lockDir: c.LockDir, observer: c.Observer, leased: map[string]map[string]bool{}}
	if g.checker == nil {
		g.checker = HTTPChecker{}
	}
	if g.clock == nil {
		g.clock = clockwork.NewRealClock()
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	return g, nil
}

// Options returns the gate's effective timings.
func (g *Gate) Options() Options { return g.opts }

// EventKind tells progress events apart.
type EventKind string

// Progress event kinds.
const (
	// EventStep is a step of the publish (machines created, switch, rollback).
	EventStep EventKind = "step"
	// EventLook is one look and the verdict after it.
	EventLook EventKind = "look"
)

// Event is one progress report.
type Event struct {
	Kind    EventKind `json:"kind"`
	At      time.Time `json:"at"`
	App     string    `json:"app"`
	Release string    `json:"release,omitempty"`
	// Message describes a step.
	Message string `json:"message,omitempty"`
	// Look and Verdict are set for EventLook.
	Look    *Look    `json:"look,omitempty"`
	Verdict *Verdict `json:"verdict,omitempty"`
	// Elapsed is the time since the publish began.
	Elapsed time.Duration `json:"elapsed"`
}

func (g *Gate) step(app, release string, t0 time.Time, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	g.log.Info(msg, "app", app, "release", release)
	if g.observer != nil {
		now := g.clock.Now()
		g.observer(Event{Kind: EventStep, At: now, App: app, Release: release, Message: msg, Elapsed: now.Sub(t0)})
	}
}

// lock takes app's lock without waiting. ErrBusy, naming the holder, when
// another publish of app holds it.
func (g *Gate) lock(app string) (*flocks.Lock, error) {
	if err := os.MkdirAll(g.lockDir, 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", app, err)
	}
	l := flocks.New(filepath.Join(g.lockDir, "publish-"+app+".lock"), "publish lock of "+app)
	var held *flocks.HeldError
	if err := l.TryLock(fmt.Sprintf("publish (pid %d)", os.Getpid())); errors.As(err, &held) {
		return nil, fmt.Errorf("%w (app %s, lock %s, held by %s)", ErrBusy, app, held.Path, held.Holder)
	} else if err != nil {
		return nil, fmt.Errorf("lock %s: %w", app, err)
	}
	return l, nil
}

// call runs one platform call with the call timeout.
func (g *Gate) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, g.opts.CallTimeout)
}

// sleep waits d on the gate's clock, or until ctx is done.
func (g *Gate) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := g.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.Chan():
		return nil
	}
}

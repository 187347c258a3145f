// Package agent is the host agent (`mythex agent`): it owns the host lock,
// keeps the one published definition (current, previous, last known good),
// starts and stops services through a runtime, and serves an authenticated
// HTTP API (package agentapi) that the rolling deploy drives.
//
// Only the agent writes the host's definitions, and only when a deploy holding
// the host lease publishes one. A deploy that dies leaves its lease to expire;
// the agent then returns the host to its last known good definition, running
// and registered with the load balancer, before anyone else may act on it.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/hostlock"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/runtime"
	"github.com/mythex/mythex/internal/watchdog"
)

// Recovery tells the agent how to put its host back into rotation when a
// deploy's lease expires. Zero value: no load balancer to talk to (the host is
// still returned to its last good definition).
type Recovery struct {
	// LB is the load balancer the target is registered with again; nil
	// means none. A recovery registers the target again; with Capacity it
	// also asks about the fleet's targets (Describe) and drains its own
	// (Deregister) before it stops what serves.
	LB lbport.Driver
	// TargetID is the host's target id in the load balancer (its name for
	// the embedded LB, hosts[].target_id for an ALB).
	TargetID string
	// TargetAddress is the host:port the load balancer routes to.
	TargetAddress string
	// Capacity keeps the fleet's deploy.min_in_service while a recovery
	// takes a serving host out of rotation (zero: not checked).
	Capacity Capacity
}

// Config configures an Agent.
type Config struct {
	// Host is the host's name (status, logs). Required.
	Host string
	// StateDir holds the definition store, the host lock and the runtime's
	// state. Required; created 0700 if missing.
	StateDir string
	// Runtime runs the services. Required.
	Runtime runtime.Runtime
	// RuntimeName names it in status ("process", "docker").
	RuntimeName string
	// Clock paces leases and waits. Default: the real clock.
	Clock clockwork.Clock
	// Logger receives the agent's events. Default: discarded.
	Logger *slog.Logger
	// Recovery puts the host back into rotation after a dead deploy.
	Recovery Recovery
	// StartTimeout bounds how long Start waits for every service to answer its
	// health check. Default: per service, its healthcheck's start period plus
	// (retries+1) × (interval + timeout), at least 10s.
	StartTimeout time.Duration
	// Registry receives the agent's Prometheus metrics. Default: a new one.
	Registry *prometheus.Registry
	// KeepLeasesOnDisk makes this Agent leave the leases a previous agent
	// left in StateDir alone: neither resumed nor recovered. For `mythex
	// agent bootstrap`, which runs before the agent and has no load
	// balancer to put a recovered host back into: the agent resumes them
	// when it starts.
	KeepLeasesOnDisk bool
	// BootClock measures how long the agent was gone, for the lease it
	// resumes after a restart. Default: LinuxBootClock.
	BootClock BootClock
	// Watchdog is the policy of the host's watchdog (interval W, failures
	// before heal K; zero fields take their defaults); nil runs no watchdog.
	// The watchdog heals crashed services from the current definition and
	// skips every round while a lease, a recovery or the bootstrap holds the
	// host lock (package watchdog).
	Watchdog *watchdog.Policy
}

// Agent is one host's agent. Create it with New; Close it when done.
type Agent struct {
	cfg   Config
	clock clockwork.Clock
	log   *slog.Logger
	store *definition.Store
	rt    runtime.Runtime
	lock  *hostlock.Lock

	hostLease  *leaseKeeper
	fleetLease *leaseKeeper
	metrics    *metrics
	// watchdog is nil when the agent runs none.
	watchdog *watchdog.Watchdog
	// hist is the host's deploy history.
	hist historyStore

	recMu        sync.Mutex
	lastRecovery *agentapi.Recovery

	// opMu serialises the operations that change what runs.
	opMu sync.Mutex
	// steps makes a deploy step and the host's other owners take turns: a
	// step holds it shared from its lease check to the end of its work, so
	// its lease cannot end and be recovered in between; a recovery and the
	// watchdog's round hold it exclusively (see owner.go).
	steps sync.RWMutex
	// hooks are test seams; nil in production.
	hooks hooks
	// gate lets a host lease request go before the watchdog's next round.
	gate roundGate

	// draining holds the stops a Drain started, by service name, until Stop
	// collects them.
	drainMu  sync.Mutex
	draining map[string]chan stopOutcome

	ctx       context.Context
	cancel    context.CancelFunc
	bg        background
	closeOnce sync.Once
}

type stopOutcome struct {
	res runtime.StopResult
	err error
}

// New opens the agent's state in cfg.StateDir. Errors: a missing required
// field, a state directory that cannot be created, a corrupt definition store.
func New(cfg Config) (*Agent, error) {
	if cfg.Host == "" || cfg.StateDir == "" || cfg.Runtime == nil {
		return nil, errors.New("agent: Host, StateDir and Runtime are required")
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
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("agent state dir: %w", err)
	}
	store, err := definition.OpenStore(definitionDir(cfg.StateDir))
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &Agent{
		cfg: cfg, clock: cfg.Clock, log: cfg.Logger.With("host", cfg.Host),
		store: store, rt: cfg.Runtime, lock: hostlock.New(cfg.StateDir),
		draining: map[string]chan stopOutcome{},
		ctx:      ctx, cancel: cancel,
	}
	a.metrics = newMetrics(cfg.Registry)
	if cfg.BootClock == nil {
		cfg.BootClock = LinuxBootClock{}
		a.cfg.BootClock = cfg.BootClock
	}
	a.hostLease = &leaseKeeper{
		clock: a.clock, log: a.log, lock: a.lock, kind: "host",
		onExpire: func(rec leaseRecord) error {
			return a.recover(rec.Lease, rec.Restore, rec.Committed, rec.EndReason, rec.Step)
		},
		store:     leaseStoreIn(cfg.StateDir, hostLeaseFile, cfg.BootClock),
		restoreOf: a.restoreTargetNow,
		halfDone:  a.halfDeployed,
		spawn:     a.bg.Go,
	}
	a.fleetLease = &leaseKeeper{clock: a.clock, log: a.log, kind: "fleet", store: leaseStoreIn(cfg.StateDir, fleetLeaseFile, cfg.BootClock), spawn: a.bg.Go}
	// The leases of the agent that ran before come back before the watchdog
	// starts: a host left half deployed stays locked until it is recovered.
	if cfg.KeepLeasesOnDisk {
		a.hostLease.store, a.fleetLease.store = leaseStore{}, leaseStore{}
	} else if err := a.resumeLeases(); err != nil {
		cancel()
		return nil, fmt.Errorf("agent: %w", err)
	}
	if cfg.Watchdog != nil {
		w, err := watchdog.New(watchdog.Config{
			Definitions: healable{a}, Runtime: cfg.Runtime, Lock: watchdogOwner{a}, StateDir: cfg.StateDir,
			Policy: *cfg.Watchdog, Clock: cfg.Clock, Logger: a.log, Registry: cfg.Registry,
		})
		if err != nil {
			cancel()
			a.hostLease.shutdown()
			a.fleetLease.shutdown()
			return nil, fmt.Errorf("agent: %w", err)
		}
		a.watchdog = w
		w.Start()
	}
	return a, nil
}

// resumeLeases picks up the host and fleet leases a previous agent left; a
// host lease that ran out meanwhile is recovered in the background, with the
// host lock held from now on.
func (a *Agent) resumeLeases() error {
	bootID, since, err := a.cfg.BootClock.Boot()
	if err != nil {
		a.log.Warn("no boot clock; a resumed lease is timed on the wall clock", "err", err)
		bootID, since = "", 0
	}
	if _, err := a.fleetLease.resume(bootID, since); err != nil {
		a.log.Error("fleet lease not resumed", "err", err)
	}
	due, err := a.hostLease.resume(bootID, since)
	if err != nil {
		return err
	}
	if due != nil {
		rec := *due
		a.bg.Go(func() { _ = a.hostLease.recoverAndUnlock(rec) }) // New: nothing is closing yet
	}
	return nil
}

// definitionDir is where the definition store lives in a state directory.
func definitionDir(stateDir string) string { return stateDir + "/definitions" }

// Store returns the host's definition store (read it; only the agent writes).
func (a *Agent) Store() *definition.Store { return a.store }

// Lock returns the host lock the agent shares with the watchdog and bootstrap.
func (a *Agent) Lock() *hostlock.Lock { return a.lock }

// Watchdog returns the host's watchdog; nil when the agent runs none.
func (a *Agent) Watchdog() *watchdog.Watchdog { return a.watchdog }

// Close stops the agent's background work — the watchdog, lease renewals and
// expiries, recoveries in flight — and returns once none of it runs. Services
// keep running, and a held lease stays on disk for the next agent on the
// state directory. Calls after the first return nil at once.
func (a *Agent) Close() error {
	a.closeOnce.Do(func() {
		if a.watchdog != nil {
			_ = a.watchdog.Close()
		}
		a.cancel()
		a.bg.close()
		// The leases stay on disk: the next agent resumes them.
		a.hostLease.shutdown()
		a.fleetLease.shutdown()
		a.closeHistory()
	})
	return nil
}

// Shutdown ends the agent as its process exits: Close, then, when
// stopServices (`mythex agent --stop-services-on-exit`), StopAll on its
// runtime. The order matters: a recovery or a watchdog heal in flight starts
// services, and one started after the stop would outlive the agent, holding
// its port — as a systemd unit's KillMode=control-group leaves no process of
// the unit behind, nothing the agent started runs on once Shutdown returns.
func (a *Agent) Shutdown(stopServices bool) {
	_ = a.Close()
	if stopServices {
		StopAll(a.rt, a.log)
	}
}

// Package runtime is the interface between the host agent and whatever runs a
// host's services: the process runtime (package process, services as child
// processes, the embedded default) or the Docker runtime (containers through
// the Docker Engine API). The agent, the watchdog and the deploy's verify talk
// to a Runtime and never to processes or containers directly.
//
// A runtime runs instances. An instance is one service at one spec
// (definition.Service.SpecHash): starting the same spec again restarts the same
// instance (as `docker start` restarts the same container), a new spec makes a
// new instance, and a stopped instance is kept, restorable, until Prune drops
// it. At most one instance per service name runs at a time.
//
// A runtime does not restart anything by itself: an instance that exits on
// its own is reported as exited (State, ExitCode), and the watchdog decides.
// The one exception is the Docker runtime, which hands the compose restart
// policy to Docker: while Docker restarts a container, it reports
// StateRestarting, which the watchdog leaves alone.
package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/mythex/mythex/internal/definition"
)

// Runtime runs a host's services. Implementations are safe for concurrent use.
type Runtime interface {
	// Start runs svc. It is idempotent on svc's spec hash: if an instance of
	// exactly this spec is running it does nothing; if one is stopped or
	// exited it is restarted (same instance, RestartCount+1); otherwise a new
	// instance is created and started. It returns once the instance's process
	// (or container) has started, not once it is healthy: health is reported
	// by Status. Errors: ErrConflict when another instance of the service (a
	// different spec) is running — stop it first; ErrUnsupported when svc has
	// nothing this runtime can run (no x-mythex.executable for the process
	// runtime, no image for Docker); ErrClosed after Close; start failures
	// (missing executable, image pull) wrapped.
	Start(ctx context.Context, svc definition.Service) error

	// Stop stops the running instance of the service named name the way
	// Docker stops a container: SIGTERM (to the whole process group or
	// container), then SIGKILL if it has not exited after grace (UseSpecGrace:
	// the instance's own stop_grace_period). The instance is kept, stopped,
	// restorable by Start with the same spec. StopResult says whether it had
	// to be killed, how long it took and how it exited; WasRunning is false
	// (and err nil) when no instance of name was running. Concurrent Stops of
	// one instance share one stop. If ctx ends first Stop returns ctx.Err()
	// and the stop carries on to its end, as `docker stop` does when its
	// client goes away. ErrNotFound when the runtime has no instance of name
	// at all.
	Stop(ctx context.Context, name string, grace time.Duration) (StopResult, error)

	// Status reports every instance the runtime keeps, running or not,
	// sorted by service name and then by start time (oldest first).
	Status(ctx context.Context) ([]ServiceStatus, error)

	// Prune drops the instances that are not running and whose spec hash is
	// not in keep, with whatever they hold (records, containers), and returns
	// their IDs. Running instances are never pruned. The caller passes the
	// spec hashes of the current, previous and last known good definitions'
	// services, so the last known good is never dropped.
	Prune(ctx context.Context, keep ...string) ([]string, error)

	// Close releases the runtime's resources. Services keep running: an agent
	// that restarts finds them again (see the implementation for how).
	Close() error
}

// UseSpecGrace as Stop's grace means the instance's own stop_grace_period
// (definition.Service.StopGracePeriod).
const UseSpecGrace time.Duration = -1

// Errors of every Runtime; compare with errors.Is.
var (
	// ErrNotFound: the runtime has no instance of that service.
	ErrNotFound = errors.New("no instance of the service")
	// ErrConflict: another instance of the service (another spec) is running.
	ErrConflict = errors.New("another instance of the service is running")
	// ErrUnsupported: the service has nothing this runtime can run.
	ErrUnsupported = errors.New("service not runnable by this runtime")
	// ErrClosed: the runtime was closed.
	ErrClosed = errors.New("runtime closed")
)

// State is the lifecycle state of an instance.
type State string

// Instance states.
const (
	// StateRunning: its process (container) is running.
	StateRunning State = "running"
	// StateExited: it ended on its own — a crash or an exit 0 nobody asked
	// for. The watchdog's business.
	StateExited State = "exited"
	// StateStopped: it ended because Stop asked it to.
	StateStopped State = "stopped"
	// StateRestarting: it exited and the runtime's own restart policy is
	// bringing it back (Docker's "restarting": a container with restart
	// always, on-failure or unless-stopped, waiting out its restart delay).
	// Only the Docker runtime reports it; the process runtime never restarts
	// anything. Not running, yet not the watchdog's business either: the
	// runtime is already restarting it, so a watchdog must not count it as a
	// strike nor start it a second time. Start of its spec does nothing;
	// Stop cancels the restart.
	StateRestarting State = "restarting"
)

// ServiceStatus is what a runtime knows about one instance.
type ServiceStatus struct {
	// Name is the service name.
	Name string `json:"name"`
	// ID identifies the instance: for the process runtime "<name>-<first 12
	// hex of the spec hash>", for Docker the container id.
	ID string `json:"id"`
	// SpecHash is the full spec hash of the instance's service.
	SpecHash string `json:"spec_hash"`
	// Version is the release version the instance runs.
	Version string `json:"version"`
	// State is running, exited, stopped or (Docker runtime) restarting.
	State State `json:"state"`
	// PID is the process id of the instance's main process (the process
	// runtime; for Docker the container's init as the host sees it); 0 when
	// unknown.
	PID int `json:"pid,omitempty"`
	// StartedAt is when the instance last started.
	StartedAt time.Time `json:"started_at"`
	// FinishedAt is when it last ended; zero while it has never ended.
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// ExitCode is how it last ended, as Docker reports it: the exit status, or
	// 128+n when killed by signal n; -1 when unknown. 0 while it has never
	// ended.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended it ("SIGKILL"), if one did.
	Signal string `json:"signal,omitempty"`
	// RestartCount is how many times this instance was started again after
	// the first start (Start of a stopped or exited instance; for Docker,
	// also the restarts of its restart policy).
	RestartCount int `json:"restart_count"`
	// Health is the instance's health from its healthcheck, Docker's states;
	// HealthNone when it has no healthcheck or is not running.
	Health Health `json:"health"`
	// Detail is a note from the runtime, e.g. that the instance was adopted
	// after an agent restart; "" normally.
	Detail string `json:"detail,omitempty"`
}

// Running reports whether the instance is running.
func (s ServiceStatus) Running() bool { return s.State == StateRunning }

// StopResult is how one Stop went.
type StopResult struct {
	// Name is the service name.
	Name string `json:"name"`
	// ID is the instance stopped.
	ID string `json:"id"`
	// WasRunning is false when nothing was running, so nothing was done.
	WasRunning bool `json:"was_running"`
	// Killed is true when the instance outlived its grace period and was
	// killed with SIGKILL: its drain did not finish in time.
	Killed bool `json:"killed"`
	// Took is the time from SIGTERM to exit (nanoseconds in JSON).
	Took time.Duration `json:"took"`
	// ExitCode is how it ended, as ServiceStatus.ExitCode.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended it, if one did.
	Signal string `json:"signal,omitempty"`
}

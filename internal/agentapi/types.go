// Package agentapi is the wire contract of the host agent's HTTP API: the JSON
// shapes, the paths, and a Client. The agent (internal/agent) serves it; the
// rolling deploy (internal/deploy) and the CLI call it.
//
// Every request carries "Authorization: Bearer <token>". Requests that change
// the host also carry the host lease's id in the X-Mythex-Lease header; without
// the live lease they are refused with 412 and change nothing.
package agentapi

import (
	"time"

	"github.com/mythex/mythex/internal/history"
)

// HeaderLease carries the host lease id on mutating requests.
const HeaderLease = "X-Mythex-Lease"

// API paths.
const (
	PathStatus     = "/v1/status"
	PathLease      = "/v1/lease"       // POST acquire; PUT renew; DELETE release (id in HeaderLease)
	PathFleetLease = "/v1/fleet-lease" // same verbs, for the fleet-wide deploy lease
	PathDefinition = "/v1/definition"  // PUT publish (body: the definition's canonical JSON); GET ?ref=current|previous|last_good reads one back
	PathDrain      = "/v1/drain"       // POST: SIGTERM the named services now, return at once
	PathStop       = "/v1/stop"        // POST: stop every running service within its grace period
	PathStart      = "/v1/start"       // POST: start the current definition, wait until running and healthy
	PathVerify     = "/v1/verify"      // POST: check the named services against the current definition
	PathRollback   = "/v1/rollback"    // POST: previous definition back to current, running
	PathMarkGood   = "/v1/mark-good"   // POST: record the current definition as last known good
	// PathLeaseBreak: POST (body LeaseBreakRequest) ends the host or fleet
	// lease now, as if it had expired: the host lease's recovery runs before
	// the answer (LeaseBreakReport). Refused with 409 while the holder still
	// renews, unless forced. No lease needed: it is the operator's way out
	// of a lease whose deploy is gone.
	PathLeaseBreak = "/v1/lease/break"
	// PathMaintenance: GET the watchdog's maintenance window, PUT turns
	// maintenance on (body MaintenanceRequest), DELETE turns it off. No lease:
	// it is the operator's switch, and it acts on nothing but the watchdog.
	PathMaintenance = "/v1/maintenance"
	PathMetrics     = "/metrics"
	// PathHistory: GET this host's deploy history (?limit=N, newest first),
	// POST one record (body history.Record). No lease.
	PathHistory = "/v1/history"
)

// LeaseRequest asks for (or renews) a lease.
type LeaseRequest struct {
	// Holder names who asks, e.g. "deploy v2 by alice@ci". Required to acquire.
	Holder string `json:"holder,omitempty"`
	// TTL is a Go duration string ("30s"): the lease lapses this long after
	// the last acquire or renew.
	TTL string `json:"ttl"`
}

// Lease is a time-limited claim on a host or on the fleet. The agent keeps
// it in its state directory: it survives an agent restart (even SIGKILL),
// and its clock goes on meanwhile.
type Lease struct {
	ID       string    `json:"id"`
	Holder   string    `json:"holder"`
	Acquired time.Time `json:"acquired"`
	// Expires is when it lapses unless renewed (wall clock).
	Expires time.Time `json:"expires"`
	// TTL is its time to live at the last acquire or renew, a Go duration
	// string ("30s"); set in status.
	TTL string `json:"ttl,omitempty"`
	// Renewed is when it was last acquired or renewed; set in status.
	Renewed *time.Time `json:"renewed,omitempty"`
	// Step is the deploy's operation on the host in progress or last done
	// (publish, drain, stop, start, rollback, mark-good) and StepState
	// "running", "done" or "failed"; set in status.
	Step      string `json:"step,omitempty"`
	StepState string `json:"step_state,omitempty"`
	// Restore is the definition the host returns to if the lease expires
	// (host lease, in status).
	Restore *DefinitionRef `json:"restore,omitempty"`
}

// LeaseBreakRequest is POST /v1/lease/break.
type LeaseBreakRequest struct {
	// Fleet breaks the fleet lease instead of the host lease.
	Fleet bool `json:"fleet,omitempty"`
	// Force breaks a lease its holder still renews.
	Force bool `json:"force,omitempty"`
	// By names who breaks it (logs).
	By string `json:"by,omitempty"`
}

// LeaseBreakReport is the answer of POST /v1/lease/break: the lease that was
// broken and, for the host lease, how the host's recovery went.
type LeaseBreakReport struct {
	Broken   Lease     `json:"broken"`
	Recovery *Recovery `json:"recovery,omitempty"`
}

// Recovery states.
const (
	RecoveryRunning  = "running"
	RecoveryRestored = "restored"
	RecoveryFailed   = "failed"
)

// Recovery is the agent's last return of its host to a verified definition
// after a deploy's host lease ended without release (it expired, ran out while
// the agent was down, or was broken).
type Recovery struct {
	// State is running, restored or failed.
	State string `json:"state"`
	// Holder is who held the lease that ended; Reason how it ended.
	Holder string `json:"holder"`
	Reason string `json:"reason"`
	// Step is the deploy's operation that was in progress then.
	Step string `json:"step,omitempty"`
	// Version is the definition the host was returned to ("" when the host
	// ran nothing before that deploy and its new services were stopped).
	Version string `json:"version,omitempty"`
	// Registered: the target was registered with the load balancer again.
	Registered bool       `json:"registered"`
	Started    time.Time  `json:"started"`
	Finished   *time.Time `json:"finished,omitempty"`
	// Error says why it failed.
	Error string `json:"error,omitempty"`
}

// RestoreStatus is the agent's honest answer to "is this host whole?", for a
// deployer deciding whether to say ROLLBACK FAILED.
type RestoreStatus struct {
	// Restored is true when the host's current definition is not half
	// deployed (a deploy published it and it never started whole here),
	// every service of it runs its spec and answers its health check, and
	// no recovery is running or failed.
	Restored bool `json:"restored"`
	// Version is the current definition's version.
	Version string `json:"version,omitempty"`
	// Reason says why not, when Restored is false.
	Reason string `json:"reason,omitempty"`
}

// DefinitionRef names one published definition.
type DefinitionRef struct {
	Version string `json:"version"`
	// Hash is the sha256 (hex) of the definition's canonical encoding.
	Hash string `json:"hash"`
}

// Definitions are the definitions a host keeps.
type Definitions struct {
	Current  *DefinitionRef `json:"current,omitempty"`
	Previous *DefinitionRef `json:"previous,omitempty"`
	LastGood *DefinitionRef `json:"last_good,omitempty"`
}

// Health of a service as its health check last saw it.
const (
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
	HealthStarting  = "starting"
	HealthUnknown   = "unknown"
)

// ServiceStatus is one service as the runtime sees it.
type ServiceStatus struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	SpecHash string `json:"spec_hash"`
	Running  bool   `json:"running"`
	// ID is the process id or container id.
	ID        string     `json:"id,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	// FinishedAt is when the instance last ended (exited or was stopped);
	// nil while it has never ended. With StartedAt and ID it lets a deploy
	// look twice: an instance that kept its ID and StartedAt and whose
	// FinishedAt did not move has stayed up between two looks.
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
	ExitCode     *int       `json:"exit_code,omitempty"`
	RestartCount int        `json:"restart_count"`
	Health       string     `json:"health"`
	HealthDetail string     `json:"health_detail,omitempty"`
}

// Status is GET /v1/status.
type Status struct {
	Host        string          `json:"host"`
	Runtime     string          `json:"runtime"`
	Definitions Definitions     `json:"definitions"`
	Services    []ServiceStatus `json:"services"`
	// LockHolder names who holds the host lock now ("" when free): a deploy
	// lease, the watchdog, the bootstrap, or a recovery.
	LockHolder string `json:"lock_holder,omitempty"`
	Lease      *Lease `json:"lease,omitempty"`
	FleetLease *Lease `json:"fleet_lease,omitempty"`
	// Watchdog is the watchdog's state, when the agent runs one.
	Watchdog *WatchdogStatus `json:"watchdog,omitempty"`
	// Restore says whether the host is whole (see RestoreStatus).
	Restore *RestoreStatus `json:"restore,omitempty"`
	// Recovery is the last (or running) recovery after a lease ended
	// without release; nil when none ran since the agent started.
	Recovery *Recovery `json:"recovery,omitempty"`
}

// WatchdogStatus is the watchdog's view of the host.
type WatchdogStatus struct {
	Enabled     bool         `json:"enabled"`
	Maintenance *Maintenance `json:"maintenance,omitempty"`
	// Interval is W, a Go duration string ("60s").
	Interval string `json:"interval,omitempty"`
	// FailuresBeforeHeal is K: consecutive failed checks before a heal.
	FailuresBeforeHeal int              `json:"failures_before_heal,omitempty"`
	LastRound          *time.Time       `json:"last_round,omitempty"`
	LastResult         string           `json:"last_result,omitempty"`
	Services           []WatchedService `json:"services,omitempty"`
}

// Maintenance pauses healing until Until.
type Maintenance struct {
	Reason string    `json:"reason"`
	Until  time.Time `json:"until"`
	By     string    `json:"by,omitempty"`
	// Since is when it was turned on.
	Since time.Time `json:"since,omitzero"`
}

// MaintenanceRequest is PUT /v1/maintenance.
type MaintenanceRequest struct {
	// For is how long healing stays paused, a Go duration string ("30m");
	// more than 0, at most a week. Required.
	For string `json:"for"`
	// Reason says why. Required.
	Reason string `json:"reason"`
	// By names who asks (a user, a CI job).
	By string `json:"by,omitempty"`
}

// MaintenanceReport is the answer of GET, PUT and DELETE /v1/maintenance:
// the window in force after the request (nil when none), and for DELETE the
// one it ended (nil when none was on).
type MaintenanceReport struct {
	Maintenance *Maintenance `json:"maintenance,omitempty"`
	Ended       *Maintenance `json:"ended,omitempty"`
}

// WatchedService is the watchdog's record of one service.
type WatchedService struct {
	Name    string `json:"name"`
	Strikes int    `json:"strikes"`
	// Of is K: the strike that heals.
	Of int `json:"of,omitempty"`
	// State is ok, starting, restarting, failing, drifted, healing,
	// crash-looping or unknown.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Since is when State last changed.
	Since *time.Time `json:"since,omitempty"`
	// Heals is how many times the watchdog healed the current spec.
	Heals int `json:"heals,omitempty"`
	// LastHeal is when it was last healed.
	LastHeal *time.Time `json:"last_heal,omitempty"`
	// NextHeal is when a crash-looping service may be healed again.
	NextHeal *time.Time `json:"next_heal,omitempty"`
}

// ServicesRequest names services for drain and verify; empty means all.
type ServicesRequest struct {
	Services []string `json:"services,omitempty"`
	// Version, for verify: the version every named service must run.
	Version string `json:"version,omitempty"`
}

// StopResult is how one service stopped.
type StopResult struct {
	Name string `json:"name"`
	// Killed is true when the service outlived its grace period and got SIGKILL.
	Killed bool `json:"killed"`
	// Seconds is how long the stop took.
	Seconds  float64 `json:"seconds"`
	ExitCode *int    `json:"exit_code,omitempty"`
}

// StopReport is POST /v1/stop.
type StopReport struct {
	Services []StopResult `json:"services"`
}

// StartResult is how one service started.
type StartResult struct {
	Name string `json:"name"`
	// Seconds is from start until the service answered its health check.
	Seconds float64 `json:"seconds"`
}

// StartReport is POST /v1/start (and /v1/rollback).
type StartReport struct {
	Services []StartResult `json:"services"`
	// Version is the definition now running (set by rollback).
	Version string `json:"version,omitempty"`
	// Restored is set by rollback: the host runs the definition it rolled
	// back to, every service healthy (RestoreStatus.Restored).
	Restored bool `json:"restored,omitempty"`
}

// ServiceCheck is the verdict on one service.
type ServiceCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Reason string `json:"reason,omitempty"`
}

// VerifyReport is POST /v1/verify: every named service runs the current
// definition's spec at the wanted version and answers its health check.
type VerifyReport struct {
	OK         bool           `json:"ok"`
	Definition DefinitionRef  `json:"definition"`
	Services   []ServiceCheck `json:"services"`
}

// PublishReport is PUT /v1/definition.
type PublishReport struct {
	Current DefinitionRef `json:"current"`
	// Changed is false when the definition was already current.
	Changed bool `json:"changed"`
}

// ErrorBody is the JSON body of every non-2xx answer.
type ErrorBody struct {
	Error string `json:"error"`
}

// HistoryList is GET /v1/history.
type HistoryList struct {
	Records []history.Record `json:"records"`
}

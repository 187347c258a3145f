package deploy

import (
	"sync"
	"time"

	"github.com/mythex/mythex/internal/lbport"
)

// Phase is one step of a host's deploy, in the order they run.
type Phase string

// The phases of one host, in order; rollback phases follow a failure.
const (
	PhaseLease   Phase = "lease"   // take the host lease (and with it the host lock)
	PhasePublish Phase = "publish" // publish the new definition; current becomes previous
	PhaseDrain   Phase = "drain"   // take the target out of rotation; wait until the LB reports it out and idle
	PhaseStop    Phase = "stop"    // stop the old services within their grace period
	PhaseStart   Phase = "start"   // start the new services; wait until each answers its health check
	PhaseHealthy Phase = "healthy" // put the target back; wait until the LB reports it healthy
	PhaseVerify  Phase = "verify"  // look twice: every listed service stays up min_healthy_time, LB healthy throughout
	PhaseRelease Phase = "release" // after the whole fleet passed the sweep: mark good, release the lease
	// PhaseRollback restores the previous definition after a failure.
	PhaseRollback Phase = "rollback"
	// PhaseSweep is the final verification of every host.
	PhaseSweep Phase = "sweep"
	// PhaseRecheck looks again at the hosts already deployed before the next
	// batch is drained.
	PhaseRecheck Phase = "recheck"
	// PhaseCapacity waits until enough targets outside the next batch are
	// healthy and in rotation (deploy.min_in_service).
	PhaseCapacity Phase = "capacity"
	// PhaseFleetRollback returns every host on the new version to its
	// previous one, batch by batch.
	PhaseFleetRollback Phase = "fleet-rollback"
)

// EventKind says what happened to a phase.
type EventKind string

// Event kinds.
const (
	EventBegin EventKind = "begin"
	EventEnd   EventKind = "end"
	EventFail  EventKind = "fail"
	// EventNote is information inside a phase (a killed service, a warning).
	EventNote EventKind = "note"
	// EventProgress says what a waiting phase waits for; every wait emits
	// one at least every 2s.
	EventProgress EventKind = "progress"
	// EventTarget is a change in what the load balancer reports of the
	// host's target, as seen by the deploy's own polls (preflight, capacity,
	// drain, healthy, verify, recheck, sweep, rollback): emitted only when
	// the state, rotation or reason changed since the last poll. Target
	// holds the new view; Phase is the phase that polled ("" in the
	// preflight).
	EventTarget EventKind = "target"
)

// Event is one progress event of a deploy, as streamed by --json.
type Event struct {
	At   time.Time `json:"at"`
	Host string    `json:"host,omitempty"`
	// Phase is the phase the event belongs to.
	Phase Phase     `json:"phase"`
	Kind  EventKind `json:"kind"`
	// Elapsed is the phase's duration so far (end, fail) in seconds.
	Elapsed float64 `json:"elapsed_seconds,omitempty"`
	Detail  string  `json:"detail,omitempty"`
	// Target is the load balancer's view of the host's target (EventTarget only).
	Target *TargetState `json:"target,omitempty"`
}

// TargetState is what one poll of the load balancer reported of a target, as
// an EventTarget carries it.
type TargetState struct {
	// State is the ALB target state: initial, healthy, unhealthy, draining,
	// or unused (also for a target the LB no longer knows).
	State string `json:"state"`
	// InRotation says whether the LB may route a new request to it.
	InRotation bool `json:"in_rotation"`
	// InFlight is the number of its requests not yet answered at the poll;
	// -1 when the LB does not report it (ALB).
	InFlight int `json:"in_flight"`
	// Reason is the LB's reason code, e.g. Target.DeregistrationInProgress.
	Reason string `json:"reason,omitempty"`
}

// targetStateOf is the state an EventTarget reports for view t.
func targetStateOf(t lbport.Target) TargetState {
	return TargetState{State: t.State.String(), InRotation: t.InRotation, InFlight: t.InFlight, Reason: string(t.Reason)}
}

// targetWatch remembers each host's last polled target state so an
// EventTarget goes out only on change. Safe for concurrent use (the hosts of
// a batch poll at once).
type targetWatch struct {
	mu   sync.Mutex
	last map[string]TargetState
}

// changed records s for host and reports whether it differs from the last
// state recorded (in-flight counts alone are no change).
func (w *targetWatch) changed(host string, s TargetState) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[string]TargetState{}
	}
	prev, ok := w.last[host]
	w.last[host] = s
	prev.InFlight = s.InFlight
	return !ok || prev != s
}

// Observer receives progress events. Calls are serialised by the Deployer; an
// observer must not block for long.
type Observer interface {
	Event(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Event calls f.
func (f ObserverFunc) Event(e Event) { f(e) }

// serialObserver serialises calls from concurrent hosts of a batch.
type serialObserver struct {
	mu sync.Mutex
	o  Observer
}

func (s *serialObserver) Event(e Event) {
	if s.o == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o.Event(e)
}

package platform

import "time"

// EventType is the kind of a machine event, with Fly's names.
type EventType string

// Event types. A platform emits launch when a machine (or a new version of it)
// is created, start each time its process starts, exit each time it ends
// (requested or not), update when its config changes, restart when it is
// restarted on request, suspend and resume around a sleep, destroy at the end.
const (
	EventLaunch  EventType = "launch"
	EventStart   EventType = "start"
	EventExit    EventType = "exit"
	EventUpdate  EventType = "update"
	EventRestart EventType = "restart"
	EventSuspend EventType = "suspend"
	EventResume  EventType = "resume"
	EventDestroy EventType = "destroy"
)

// Event is one machine event, shaped as a Fly machine event: {type, status,
// source, timestamp, request}, with the exit details of request.exit_event and
// request.restart_count lifted up.
type Event struct {
	// Type is the kind of event.
	Type EventType `json:"type"`
	// Status is the machine's status the event left it in (e.g. "started",
	// "stopped", "created"), as the platform words it.
	Status string `json:"status,omitempty"`
	// Source is who caused it: "user" for an API request, "flyd" (fly),
	// "supervisor" (local) or "docker" for the platform itself.
	Source string `json:"source,omitempty"`
	// Timestamp is when it happened (Fly: milliseconds since the epoch).
	Timestamp time.Time `json:"timestamp"`
	// Exit holds the details of an exit event; nil for other types.
	Exit *Exit `json:"exit,omitempty"`
	// RestartCount is request.restart_count: on an exit the platform restarts
	// from, the number of that restart (1 for the first); else the count so far.
	RestartCount int `json:"restart_count,omitempty"`
}

// Exit is how a machine's process ended (Fly request.exit_event).
type Exit struct {
	// ExitCode is the process's exit status; -1 when it died of a signal and
	// the platform gives no code.
	ExitCode int `json:"exit_code"`
	// Signal is the signal that ended it, 0 for none.
	Signal int `json:"signal,omitempty"`
	// OOMKilled is true when the kernel's OOM killer ended it.
	OOMKilled bool `json:"oom_killed,omitempty"`
	// RequestedStop is true when the exit followed a stop asked through the API.
	RequestedStop bool `json:"requested_stop,omitempty"`
	// Restarting is true when the platform restarts the machine after this exit.
	Restarting bool `json:"restarting,omitempty"`
	// ExitedAt is when the process ended; zero when unknown (use the event's
	// Timestamp then).
	ExitedAt time.Time `json:"exited_at,omitzero"`
}

// At returns when the event happened: an exit's ExitedAt when known, else the
// event's Timestamp.
func (e Event) At() time.Time {
	if e.Exit != nil && !e.Exit.ExitedAt.IsZero() {
		return e.Exit.ExitedAt
	}
	return e.Timestamp
}

// TrimEvents returns events (newest first) cut to at most max entries,
// keeping the newest — the way platforms bound their per-machine event lists.
// max <= 0 keeps all.
func TrimEvents(events []Event, max int) []Event {
	if max > 0 && len(events) > max {
		return events[:max]
	}
	return events
}

package publish

import (
	"time"

	"github.com/mythex/mythex/internal/platform"
)

// IsCrash reports whether e is a crash of a server under restart policy
// policy: an exit event that was not a requested stop and either
// has a non-zero exit code, a signal or an OOM kill, or happened under restart
// policy always, or was restarted by the platform — a server is not meant to
// exit, so an exit 0 the platform had to restart from is still a crash. An exit
// event without details is counted as a crash: nothing says it was asked for.
func IsCrash(e platform.Event, policy platform.RestartPolicy) bool {
	if e.Type != platform.EventExit {
		return false
	}
	x := e.Exit
	if x == nil {
		return true
	}
	if x.RequestedStop {
		return false
	}
	if x.ExitCode != 0 || x.Signal != 0 || x.OOMKilled {
		return true
	}
	return policy == platform.RestartAlways || x.Restarting
}

// crashesSince returns the crashes in events (newest first, as a platform
// returns them) that happened at or after t0, newest first. Over a bounded
// list this is a lower bound of the crashes since t0, never a count.
func crashesSince(events []platform.Event, t0 time.Time, policy platform.RestartPolicy) []platform.Event {
	var out []platform.Event
	for _, e := range events {
		if IsCrash(e, policy) && !e.At().Before(t0) {
			out = append(out, e)
		}
	}
	return out
}

// latest returns the event with the latest At among events, and false when
// there is none. Platforms return events newest first, but the order is not
// trusted: the maximum is taken.
func latest(events []platform.Event) (platform.Event, bool) {
	var best platform.Event
	found := false
	for _, e := range events {
		if !found || e.At().After(best.At()) {
			best, found = e, true
		}
	}
	return best, found
}

// newestOfType returns the newest event of type t in events.
func newestOfType(events []platform.Event, t platform.EventType) (platform.Event, bool) {
	var of []platform.Event
	for _, e := range events {
		if e.Type == t {
			of = append(of, e)
		}
	}
	return latest(of)
}

// instanceStart is when the machine's current process started: the platform's
// own StartedAt when it gives one, else the newest start event, else zero.
func instanceStart(m platform.Machine) time.Time {
	if !m.StartedAt.IsZero() {
		return m.StartedAt
	}
	if e, ok := newestOfType(m.Events, platform.EventStart); ok {
		return e.Timestamp
	}
	return time.Time{}
}

// gaveUp reports whether the platform has stopped restarting m: the machine
// is stopped or failed and its newest exit was not requested and not followed
// by a restart (restart policy no, on-failure retries exhausted, or a clean
// exit under on-failure). The newest exit is returned for the message.
func gaveUp(m platform.Machine) (platform.Event, bool) {
	if m.State != platform.StateStopped && m.State != platform.StateFailed {
		return platform.Event{}, false
	}
	e, ok := newestOfType(m.Events, platform.EventExit)
	if !ok {
		// A failed machine without an exit in its (truncated) list still
		// could not be kept running.
		return platform.Event{}, m.State == platform.StateFailed
	}
	if e.Exit != nil && (e.Exit.RequestedStop || e.Exit.Restarting) {
		return e, false
	}
	return e, true
}

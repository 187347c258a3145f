package publish

import (
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/platform"
)

// t0 is the publish start of the table tests: the day of the write-up's three
// publishes.
var t0 = time.Date(2025, 9, 25, 12, 0, 0, 0, time.UTC)

// at returns t0 + secs seconds.
func at(secs float64) time.Time { return t0.Add(time.Duration(secs * float64(time.Second))) }

func start(secs float64) platform.Event {
	return platform.Event{Type: platform.EventStart, Status: "started", Source: "flyd", Timestamp: at(secs)}
}

func launch(secs float64) platform.Event {
	return platform.Event{Type: platform.EventLaunch, Status: "created", Source: "user", Timestamp: at(secs)}
}

// crash is an exit the platform restarts from, with restart count rc.
func crash(secs float64, code, rc int) platform.Event {
	return platform.Event{Type: platform.EventExit, Status: "stopped", Source: "flyd", Timestamp: at(secs), RestartCount: rc,
		Exit: &platform.Exit{ExitCode: code, Restarting: true, ExitedAt: at(secs)}}
}

// finalExit is an exit the platform does not restart from.
func finalExit(secs float64, code, rc int) platform.Event {
	return platform.Event{Type: platform.EventExit, Status: "stopped", Source: "flyd", Timestamp: at(secs), RestartCount: rc,
		Exit: &platform.Exit{ExitCode: code, ExitedAt: at(secs)}}
}

func requestedStop(secs float64) platform.Event {
	return platform.Event{Type: platform.EventExit, Status: "stopped", Source: "user", Timestamp: at(secs),
		Exit: &platform.Exit{ExitCode: 0, Signal: 15, RequestedStop: true, ExitedAt: at(secs)}}
}

// newestFirst reverses events given oldest first, the way one reads a timeline.
func newestFirst(events ...platform.Event) []platform.Event {
	out := make([]platform.Event, len(events))
	for i, e := range events {
		out[len(events)-1-i] = e
	}
	return out
}

// mach builds a machine m1 running image "app:v2" under restart policy.
func mach(state platform.State, policy platform.RestartPolicy, events ...platform.Event) platform.Machine {
	return platform.Machine{ID: "m1", App: "api", State: state, InstanceID: "i1",
		Config: platform.Config{Image: "app:v2", Restart: platform.Restart{Policy: policy}}, Events: events}
}

var okProbe = HealthResult{Ran: true, OK: true, Status: 200, Target: "http://m1/healthz"}
var badProbe = HealthResult{Ran: true, Status: 503, Target: "http://m1/healthz"}
var refused = HealthResult{Ran: true, Error: "connection refused", Target: "http://m1/healthz"}

// lookAt is one look at machine m1.
func lookAt(n int, secs float64, m platform.Machine, p HealthResult) Look {
	m.ID = "m1"
	return Look{N: n, At: at(secs), Machines: []MachineLook{{ID: "m1", Machine: m, Health: p}}}
}

// cpErr is one look at m1 the platform did not answer.
func cpErr(n int, secs float64, p HealthResult) Look {
	return Look{N: n, At: at(secs), Machines: []MachineLook{{ID: "m1", ErrKind: ErrKindControlPlane, Err: "429 Too Many Requests", Health: p}}}
}

// input judges looks of m1 at now, with the window ending at deadline
// seconds.
func input(now, deadline float64, looks ...Look) Input {
	return Input{Start: t0, Now: at(now), Deadline: at(deadline), Image: "app:v2", Machines: []string{"m1"}, Looks: looks,
		Policy: Policy{StableFor: 10 * time.Second, LookInterval: 5 * time.Second, PollInterval: time.Second}}
}

func (v Verdict) String() string {
	return fmt.Sprintf("%s reasons=%q warnings=%q", v.Status, v.Reasons, v.Warnings)
}

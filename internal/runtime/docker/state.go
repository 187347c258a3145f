package docker

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"golang.org/x/sys/unix"

	"github.com/mythex/mythex/internal/runtime"
)

// statusOf maps a container as Docker reports it (inspect) to the runtime's
// status, with what the runtime recorded about it (m) and whether a Stop of
// it is in progress. Docker's states map as:
//
//   - running → running; paused → running, with Detail "paused";
//   - restarting → runtime.StateRestarting (its restart policy is at work);
//   - exited, dead, created, removing → stopped when the exit is the one a
//     Stop caused (or a Stop is in progress), exited otherwise.
//
// ExitCode is Docker's (128+n for signal n; 0 before the first exit),
// Signal the signal name inferred from it (Docker records no signal) or
// SIGKILL when a Stop had to kill, RestartCount the runtime's restarts by
// Start plus Docker's RestartCount (its restart policy's, since the last
// start), and Health Docker's healthcheck state while running.
func statusOf(c container.InspectResponse, m mark, stopping bool) runtime.ServiceStatus {
	st := c.State
	if st == nil {
		st = &container.State{}
	}
	labels := map[string]string{}
	if c.Config != nil {
		labels = c.Config.Labels
	}
	s := runtime.ServiceStatus{
		Name:         label(labels, LabelService),
		ID:           c.ID,
		SpecHash:     label(labels, LabelSpecHash),
		Version:      label(labels, LabelVersion),
		PID:          st.Pid,
		StartedAt:    dockerTime(st.StartedAt),
		FinishedAt:   dockerTime(st.FinishedAt),
		RestartCount: m.Starts + c.RestartCount,
		Health:       runtime.Health{Status: runtime.HealthNone},
	}
	var details []string
	switch st.Status {
	case container.StateRunning, container.StatePaused:
		s.State = runtime.StateRunning
		if st.Status == container.StatePaused {
			details = append(details, "paused")
		}
		s.Health = healthOf(st.Health, s.StartedAt)
	case container.StateRestarting:
		s.State = runtime.StateRestarting
		details = append(details, "restarting under its restart policy")
	default:
		s.State = runtime.StateExited
		if stopping || (m.StoppedFinishedAt != "" && m.StoppedFinishedAt == st.FinishedAt) {
			s.State = runtime.StateStopped
		}
		if st.Status == container.StateCreated {
			details = append(details, "created, never started")
		}
		if st.Status == container.StateDead || st.Status == container.StateRemoving {
			details = append(details, "docker state "+string(st.Status))
		}
	}
	if !s.FinishedAt.IsZero() {
		s.ExitCode = st.ExitCode
		s.Signal = signalOf(st.ExitCode)
		if s.State == runtime.StateStopped && m.Killed {
			s.Signal = "SIGKILL"
		}
	}
	if st.OOMKilled {
		details = append(details, "OOM killed")
	}
	if st.Error != "" {
		details = append(details, st.Error)
	}
	s.Detail = strings.Join(details, "; ")
	return s
}

// healthOf maps Docker's State.Health of the run that started at started;
// nil (no healthcheck) is HealthNone. Docker keeps a container's health log
// across its runs (a container started again resets its status to
// "starting", not its log), so checks that began before started are an
// earlier run's and are left out: a restored container that has not passed
// yet must not show the checks its previous run passed. A zero started keeps
// them all.
func healthOf(h *container.Health, started time.Time) runtime.Health {
	if h == nil || h.Status == "" || h.Status == container.NoHealthcheck {
		return runtime.Health{Status: runtime.HealthNone}
	}
	out := runtime.Health{Status: runtime.HealthStatus(h.Status), FailingStreak: h.FailingStreak}
	for _, r := range h.Log {
		if r == nil || r.Start.Before(started) {
			continue
		}
		out.Log = append(out.Log, runtime.CheckResult{Start: r.Start, End: r.End, OK: r.ExitCode == 0, ExitCode: r.ExitCode, Output: runtime.CapOutput(r.Output)})
	}
	if len(out.Log) > runtime.MaxHealthLog {
		out.Log = out.Log[len(out.Log)-runtime.MaxHealthLog:]
	}
	return out
}

// dockerTime parses Docker's RFC 3339 timestamps; Docker's "never"
// (0001-01-01T00:00:00Z) and anything unparsable give the zero time.
func dockerTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

// signalOf infers the signal from a Docker exit code: 128+n is signal n, as
// a shell reports it (Docker records only the code). An exit code that is
// not 129–159 names no signal.
func signalOf(code int) string {
	if code <= 128 || code > 128+31 {
		return ""
	}
	name := unix.SignalName(syscall.Signal(code - 128))
	if name == "" {
		return fmt.Sprintf("signal %d", code-128)
	}
	return name
}

// wasKilled decides whether a stop had to SIGKILL: the container ended with
// 137 (128+SIGKILL), not for lack of memory, and no sooner than the stop
// timeout Docker waits before killing. A container that exits 137 on its
// own before the timeout (its process killed by something else) was not
// killed by the stop.
func wasKilled(exitCode int, oomKilled bool, took, timeout time.Duration) bool {
	return exitCode == 128+int(syscall.SIGKILL) && !oomKilled && took >= timeout
}

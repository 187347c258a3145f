package docker

import (
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/mythex/mythex/internal/runtime"
)

const (
	started  = "2025-03-01T10:00:00.123456789Z"
	finished = "2025-03-01T10:05:00Z"
	never    = "0001-01-01T00:00:00Z"
)

// inspected is a container as Docker's inspect reports it.
func inspected(status container.ContainerState, exitCode int, finishedAt string, h *container.Health) container.InspectResponse {
	return container.InspectResponse{
		ContainerJSONBase: &container.ContainerJSONBase{
			ID:           "c0ffee",
			RestartCount: 2,
			State: &container.State{
				Status: status, Pid: 4242, ExitCode: exitCode, StartedAt: started, FinishedAt: finishedAt, Health: h,
			},
		},
		Config: &container.Config{Labels: map[string]string{LabelService: "api", LabelSpecHash: "abc", LabelVersion: "v2"}},
	}
}

func TestStatusOf(t *testing.T) {
	healthy := &container.Health{Status: container.Healthy, Log: []*container.HealthcheckResult{{ExitCode: 0, Output: "ok"}}}
	cases := []struct {
		name       string
		c          container.InspectResponse
		mark       mark
		stopping   bool
		wantState  runtime.State
		wantHealth runtime.HealthStatus
		wantCode   int
		wantSignal string
		wantDetail string
	}{
		{name: "running and healthy", c: inspected(container.StateRunning, 0, never, healthy), wantState: runtime.StateRunning, wantHealth: runtime.HealthHealthy},
		{name: "running without healthcheck", c: inspected(container.StateRunning, 0, never, nil), wantState: runtime.StateRunning, wantHealth: runtime.HealthNone},
		{name: "paused counts as running", c: inspected(container.StatePaused, 0, never, nil), wantState: runtime.StateRunning, wantHealth: runtime.HealthNone, wantDetail: "paused"},
		{name: "restarting is Docker's business", c: inspected(container.StateRestarting, 1, finished, healthy), wantState: runtime.StateRestarting, wantHealth: runtime.HealthNone, wantCode: 1, wantDetail: "restart policy"},
		{name: "exited on its own", c: inspected(container.StateExited, 3, finished, healthy), wantState: runtime.StateExited, wantHealth: runtime.HealthNone, wantCode: 3},
		{name: "docker kill reads as SIGKILL", c: inspected(container.StateExited, 137, finished, nil), wantState: runtime.StateExited, wantHealth: runtime.HealthNone, wantCode: 137, wantSignal: "SIGKILL"},
		{name: "the exit a Stop caused", c: inspected(container.StateExited, 0, finished, nil), mark: mark{StoppedFinishedAt: finished}, wantState: runtime.StateStopped, wantHealth: runtime.HealthNone},
		{name: "a Stop that killed", c: inspected(container.StateExited, 137, finished, nil), mark: mark{StoppedFinishedAt: finished, Killed: true}, wantState: runtime.StateStopped, wantHealth: runtime.HealthNone, wantCode: 137, wantSignal: "SIGKILL"},
		{name: "a later exit than the stopped one is a crash", c: inspected(container.StateExited, 2, finished, nil), mark: mark{StoppedFinishedAt: "2025-03-01T09:00:00Z"}, wantState: runtime.StateExited, wantHealth: runtime.HealthNone, wantCode: 2},
		{name: "exited while a Stop is in progress", c: inspected(container.StateExited, 143, finished, nil), stopping: true, wantState: runtime.StateStopped, wantHealth: runtime.HealthNone, wantCode: 143, wantSignal: "SIGTERM"},
		{name: "created, never started", c: inspected(container.StateCreated, 0, never, nil), wantState: runtime.StateExited, wantHealth: runtime.HealthNone, wantDetail: "never started"},
		{name: "dead", c: inspected(container.StateDead, 1, finished, nil), wantState: runtime.StateExited, wantHealth: runtime.HealthNone, wantCode: 1, wantDetail: "dead"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := statusOf(tc.c, tc.mark, tc.stopping)
			if s.State != tc.wantState || s.Health.Status != tc.wantHealth || s.ExitCode != tc.wantCode || s.Signal != tc.wantSignal {
				t.Errorf("status = %s health %s code %d signal %q; want %s %s %d %q", s.State, s.Health.Status, s.ExitCode, s.Signal, tc.wantState, tc.wantHealth, tc.wantCode, tc.wantSignal)
			}
			if !strings.Contains(s.Detail, tc.wantDetail) || (tc.wantDetail == "" && s.Detail != "") {
				t.Errorf("detail = %q, want %q", s.Detail, tc.wantDetail)
			}
			if s.Name != "api" || s.SpecHash != "abc" || s.Version != "v2" || s.ID != "c0ffee" || s.PID != 4242 {
				t.Errorf("identity = %+v", s)
			}
		})
	}
}

// TestStatusOf_LegacyLabels: a container an older mythex labeled
// mythex.service, … reads as the same service, spec and version.
func TestStatusOf_LegacyLabels(t *testing.T) {
	c := inspected(container.StateRunning, 0, never, nil)
	c.Config.Labels = legacy(c.Config.Labels)
	if s := statusOf(c, mark{}, false); s.Name != "api" || s.SpecHash != "abc" || s.Version != "v2" {
		t.Errorf("status = %s %s %s; want api abc v2 from the legacy labels", s.Name, s.SpecHash, s.Version)
	}
}

func TestStatusOf_Counts(t *testing.T) {
	c := inspected(container.StateRunning, 0, never, nil)
	c.State.OOMKilled = true
	c.State.Error = "boom"
	s := statusOf(c, mark{Starts: 3}, false)
	if s.RestartCount != 5 {
		t.Errorf("restart count = %d, want 3 Starts + 2 of Docker's policy", s.RestartCount)
	}
	if !s.StartedAt.Equal(time.Date(2025, 3, 1, 10, 0, 0, 123456789, time.UTC)) || !s.FinishedAt.IsZero() {
		t.Errorf("started %v finished %v", s.StartedAt, s.FinishedAt)
	}
	if s.Detail != "OOM killed; boom" {
		t.Errorf("detail = %q", s.Detail)
	}
}

func TestHealthOf(t *testing.T) {
	var log []*container.HealthcheckResult
	for i := range 7 {
		log = append(log, &container.HealthcheckResult{ExitCode: i % 2, Output: strings.Repeat("x", 5000)})
	}
	h := healthOf(&container.Health{Status: container.Unhealthy, FailingStreak: 4, Log: log}, time.Time{})
	if h.Status != runtime.HealthUnhealthy || h.FailingStreak != 4 || len(h.Log) != runtime.MaxHealthLog {
		t.Fatalf("health = %+v", h)
	}
	if h.Log[0].ExitCode != 0 || !h.Log[0].OK || h.Log[1].OK || len(h.Log[1].Output) != runtime.MaxCheckOutput {
		t.Errorf("log = %+v, want the latest five, OK on exit 0, output bounded", h.Log[:2])
	}
	if got := healthOf(nil, time.Time{}); got.Status != runtime.HealthNone {
		t.Errorf("no healthcheck = %+v", got)
	}
	if got := healthOf(&container.Health{Status: container.Starting}, time.Time{}); got.Status != runtime.HealthStarting {
		t.Errorf("starting = %+v", got)
	}
}

// A container started again keeps Docker's health log of its earlier runs;
// only the checks of the current run count.
func TestHealthOf_LeavesOutEarlierRuns(t *testing.T) {
	started := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	log := []*container.HealthcheckResult{
		{Start: started.Add(-time.Minute), ExitCode: 0, Output: "earlier run: ok"},
		{Start: started.Add(-time.Second), ExitCode: 0, Output: "earlier run: ok"},
		{Start: started.Add(2 * time.Second), ExitCode: 1, Output: "this run: connection refused"},
	}
	h := healthOf(&container.Health{Status: container.Starting, Log: log}, started)
	if len(h.Log) != 1 || h.Log[0].Output != "this run: connection refused" || h.Log[0].OK {
		t.Errorf("log = %+v, want only this run's failed check", h.Log)
	}
	if h := healthOf(&container.Health{Status: container.Starting, Log: log[:2]}, started); len(h.Log) != 0 {
		t.Errorf("log = %+v, want none: no check of this run yet", h.Log)
	}
}

func TestSignalOf(t *testing.T) {
	cases := []struct {
		code int
		want string
	}{{0, ""}, {1, ""}, {128, ""}, {129, "SIGHUP"}, {137, "SIGKILL"}, {143, "SIGTERM"}, {160, ""}, {255, ""}}
	for _, tc := range cases {
		if got := signalOf(tc.code); got != tc.want {
			t.Errorf("signalOf(%d) = %q, want %q", tc.code, got, tc.want)
		}
	}
}

func TestWasKilled(t *testing.T) {
	cases := []struct {
		name          string
		code          int
		oom           bool
		took, timeout time.Duration
		want          bool
	}{
		{"outlived its grace", 137, false, 2100 * time.Millisecond, 2 * time.Second, true},
		{"grace 0 kills at once", 137, false, 10 * time.Millisecond, 0, true},
		{"drained in time", 0, false, 900 * time.Millisecond, 2 * time.Second, false},
		{"died of SIGTERM", 143, false, 50 * time.Millisecond, 2 * time.Second, false},
		{"137 before the grace: killed by someone else", 137, false, 500 * time.Millisecond, 2 * time.Second, false},
		{"out of memory", 137, true, 3 * time.Second, 2 * time.Second, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := wasKilled(tc.code, tc.oom, tc.took, tc.timeout); got != tc.want {
				t.Errorf("wasKilled = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDockerTime(t *testing.T) {
	if !dockerTime(never).IsZero() || !dockerTime("").IsZero() || !dockerTime("garbage").IsZero() {
		t.Error("Docker's never, empty and garbage must be the zero time")
	}
	if got := dockerTime(finished); !got.Equal(time.Date(2025, 3, 1, 10, 5, 0, 0, time.UTC)) {
		t.Errorf("dockerTime = %v", got)
	}
}

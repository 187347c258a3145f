package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/versions"
	"github.com/docker/docker/client"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

// startIntervalCheck is a healthcheck whose interval (30s) is far beyond the
// tests' wait (startIntervalWait): only checks at start_interval (100ms),
// Docker's own from API 1.44 or the runtime's before, can make it healthy in
// time.
func startIntervalCheck(test []string) *definition.Healthcheck {
	return &definition.Healthcheck{
		Test: test, Interval: 30 * time.Second, Timeout: 3 * time.Second, Retries: 3,
		StartPeriod: 20 * time.Second, StartInterval: 100 * time.Millisecond,
	}
}

// startIntervalWait bounds the wait for a start_interval check: well under
// the healthcheck's 30s interval, generous for a loaded machine.
const startIntervalWait = 15 * time.Second

func TestDocker_StartIntervalOnOldEngines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.newDocker(t, Options{})
	ctx := context.Background()
	svc, _ := e.service(t, "api", "v1", nil)
	svc.Healthcheck = startIntervalCheck(svc.Healthcheck.Test)
	old := versions.LessThan(e.cli.ClientVersion(), startIntervalAPI)

	check := func(what string) runtime.ServiceStatus {
		t.Helper()
		t0 := time.Now()
		if err := d.Start(ctx, svc); err != nil {
			t.Fatalf("Start: %v", err)
		}
		s := waitStatusWithin(t, d, "api", "", what+": healthy at start_interval, before Docker's first check at interval (30s)", startIntervalWait,
			func(s runtime.ServiceStatus) bool {
				return s.State == runtime.StateRunning && s.Health.Status == runtime.HealthHealthy
			})
		t.Logf("%s: healthy %v after Start (engine API %s)", what, time.Since(t0).Round(time.Millisecond), e.cli.ClientVersion())
		if n := len(s.Health.Log); n == 0 || !s.Health.Log[n-1].OK {
			t.Errorf("%s: health log = %+v, want the passing check last", what, s.Health.Log)
		}
		if !old {
			return s
		}
		for _, want := range []string{"start_interval (100ms)", "run by mythex", "API " + e.cli.ClientVersion()} {
			if !strings.Contains(s.Detail, want) {
				t.Errorf("%s: detail = %q, want it to say %q", what, s.Detail, want)
			}
		}
		c, err := e.cli.ContainerInspect(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if c.State.Health == nil || c.State.Health.Status != container.Starting {
			t.Errorf("%s: Docker's own health = %+v, want still starting (the runtime's check made it healthy)", what, c.State.Health)
		}
		return s
	}
	first := check("created")
	if _, err := d.Stop(ctx, "api", runtime.UseSpecGrace); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	again := check("restarted")
	if again.ID != first.ID || !again.StartedAt.After(first.StartedAt) {
		t.Errorf("restart: %s started %v, want the same container %s started again after %v", again.ID, again.StartedAt, first.ID, first.StartedAt)
	}
}

func TestDocker_StartIntervalFailingCheckStaysStarting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if !versions.LessThan(e.cli.ClientVersion(), startIntervalAPI) {
		t.Skipf("docker: the engine's API %s has start_interval; the runtime runs no checks of its own", e.cli.ClientVersion())
	}
	d := e.newDocker(t, Options{})
	ctx := context.Background()
	svc, _ := e.service(t, "api", "v1", nil)
	svc.Healthcheck = startIntervalCheck([]string{"/mythex", "sample-app", "check", "http://127.0.0.1:1/healthz"}) // nothing listens
	if err := d.Start(ctx, svc); err != nil {
		t.Fatalf("Start: %v", err)
	}
	s := waitStatusWithin(t, d, "api", "", "checked 3 times at start_interval", startIntervalWait, func(s runtime.ServiceStatus) bool {
		return s.State == runtime.StateRunning && len(s.Health.Log) >= 3
	})
	if s.Health.Status != runtime.HealthStarting || s.Health.FailingStreak != 0 {
		t.Errorf("health = %+v, want starting with no failing streak (failures in the start period do not count)", s.Health)
	}
	for _, r := range s.Health.Log {
		if r.OK || r.ExitCode == 0 || r.End.Before(r.Start) {
			t.Errorf("check %+v, want a failure", r)
		}
	}
	if strings.Contains(s.Detail, "start_interval") {
		t.Errorf("detail = %q, want nothing about a passed check", s.Detail)
	}
	// Close ends the checks still running, and waits for them.
	done := make(chan struct{})
	go func() { d.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10s: the start_interval checks did not end")
	}
}

func TestNeedsStartInterval(t *testing.T) {
	hc := func(f func(*definition.Healthcheck)) *definition.Healthcheck {
		h := startIntervalCheck([]string{"/app", "check"})
		if f != nil {
			f(h)
		}
		return h
	}
	cases := []struct {
		name string
		h    *definition.Healthcheck
		api  string
		want bool
	}{
		{"API 1.41 lacks start_interval", hc(nil), "1.41", true},
		{"API 1.43 lacks it", hc(nil), "1.43", true},
		{"API 1.44 has it", hc(nil), "1.44", false},
		{"API 1.47 has it", hc(nil), "1.47", false},
		{"no healthcheck", nil, "1.41", false},
		{"no exec test", hc(func(h *definition.Healthcheck) { h.Test = nil }), "1.41", false},
		{"no start period", hc(func(h *definition.Healthcheck) { h.StartPeriod = 0 }), "1.41", false},
		{"no start interval", hc(func(h *definition.Healthcheck) { h.StartInterval = 0 }), "1.41", false},
		{"Docker checks as often anyway", hc(func(h *definition.Healthcheck) { h.Interval = h.StartInterval }), "1.41", false},
	}
	for _, tc := range cases {
		if got := needsStartInterval(tc.h, tc.api); got != tc.want {
			t.Errorf("%s: needsStartInterval = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStartChecksOver(t *testing.T) {
	now := time.Date(2025, 3, 1, 10, 0, 5, 0, time.UTC)
	end := now.Add(time.Second)
	state := func(status container.ContainerState, startedAt, health string) *container.State {
		st := &container.State{Status: status, StartedAt: startedAt}
		if health != "" {
			st.Health = &container.Health{Status: health}
		}
		return st
	}
	cases := []struct {
		name string
		st   *container.State
		now  time.Time
		want string // a part of the reason; "" goes on
	}{
		{"running, starting, in the start period", state(container.StateRunning, started, container.Starting), now, ""},
		{"stopped", state(container.StateExited, started, ""), now, "exited"},
		{"restarting under its policy", state(container.StateRestarting, started, container.Starting), now, "restarting"},
		{"started again", state(container.StateRunning, "2025-03-01T10:00:04Z", container.Starting), now, "started again"},
		{"Docker found it healthy", state(container.StateRunning, started, container.Healthy), now, "Docker's own check"},
		{"Docker found it unhealthy", state(container.StateRunning, started, container.Unhealthy), now, "Docker's own check"},
		{"no health", state(container.StateRunning, started, ""), now, "Docker's own check"},
		{"start period over", state(container.StateRunning, started, container.Starting), end, "start period"},
	}
	for _, tc := range cases {
		got := startChecksOver(tc.st, started, tc.now, end)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: startChecksOver = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestOverlayStart(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	res := func(sec int, ok bool) runtime.CheckResult {
		code := 1
		if ok {
			code = 0
		}
		at := t0.Add(time.Duration(sec) * time.Second)
		return runtime.CheckResult{Start: at, End: at, OK: ok, ExitCode: code}
	}
	starting := runtime.ServiceStatus{Name: "api", State: runtime.StateRunning, Health: runtime.Health{Status: runtime.HealthStarting}}

	s := overlayStart(starting, startRun{interval: 100 * time.Millisecond, log: []runtime.CheckResult{res(1, false), res(2, false)}}, "1.41")
	if s.Health.Status != runtime.HealthStarting || len(s.Health.Log) != 2 || s.Detail != "" {
		t.Errorf("failed checks: %+v, want starting, both checks in the log, no detail", s)
	}

	docker := starting
	docker.Detail = "paused"
	docker.Health.Log = []runtime.CheckResult{res(0, false), res(5, false)}
	r := startRun{interval: 100 * time.Millisecond, passed: true, log: []runtime.CheckResult{res(1, false), res(2, false), res(3, false), res(4, true)}}
	s = overlayStart(docker, r, "1.41")
	if s.Health.Status != runtime.HealthHealthy {
		t.Errorf("passed: health %s, want healthy", s.Health.Status)
	}
	if len(s.Health.Log) != runtime.MaxHealthLog || !s.Health.Log[0].Start.Equal(res(1, false).Start) || !s.Health.Log[3].OK || !s.Health.Log[4].Start.Equal(res(5, false).Start) {
		t.Errorf("passed: log %+v, want the latest %d of both, by start", s.Health.Log, runtime.MaxHealthLog)
	}
	if !strings.HasPrefix(s.Detail, "paused; healthy") || !strings.Contains(s.Detail, "start_interval (100ms)") || !strings.Contains(s.Detail, "API 1.41") {
		t.Errorf("passed: detail %q", s.Detail)
	}
	if len(docker.Health.Log) != 2 {
		t.Errorf("overlayStart changed its argument's log: %+v", docker.Health.Log)
	}
}

func TestStartChecksApply(t *testing.T) {
	cli, err := client.NewClientWithOpts(client.WithVersion("1.41")) // never dialled
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	sc := newStartChecks(cli, nil, nil)
	defer sc.close()
	cur := runKey{id: "c0ffee", startedAt: started}
	earlier := runKey{id: "c0ffee", startedAt: "2025-03-01T09:00:00Z"}
	other := runKey{id: "beef", startedAt: started}
	pass := runtime.CheckResult{OK: true}
	for _, k := range []runKey{cur, earlier, other} {
		sc.record(k, 100*time.Millisecond, pass)
	}

	c := inspected(container.StateRunning, 0, never, &container.Health{Status: container.Starting})
	s := sc.apply(statusOf(c, mark{}, false), c)
	if s.Health.Status != runtime.HealthHealthy || !strings.Contains(s.Detail, "API 1.41") {
		t.Errorf("starting after a passed check: %+v, want healthy", s)
	}
	if sc.runs[earlier] != nil || sc.runs[cur] == nil || sc.runs[other] == nil {
		t.Errorf("runs kept %v, want the earlier run of c0ffee forgotten", sc.runs)
	}

	c = inspected(container.StateRunning, 0, never, &container.Health{Status: container.Unhealthy, FailingStreak: 3})
	s = sc.apply(statusOf(c, mark{}, false), c)
	if s.Health.Status != runtime.HealthUnhealthy || s.Detail != "" {
		t.Errorf("Docker found it unhealthy: %+v, want Docker's state", s)
	}
	if sc.runs[cur] != nil {
		t.Errorf("run still kept once Docker's check had a result")
	}

	sc.forget("beef")
	if len(sc.runs) != 0 {
		t.Errorf("runs %v after forget, want none", sc.runs)
	}
}

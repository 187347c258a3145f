package docker

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

func TestDocker_StartStopStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.newDocker(t, Options{})
	ctx := context.Background()
	svc, port := e.service(t, "api", "v1", nil)
	if err := d.Start(ctx, svc); err != nil {
		t.Fatalf("Start: %v", err)
	}
	s := healthy(t, d, "api")
	if s.Version != "v1" || s.SpecHash != svc.SpecHash() || s.PID == 0 || s.StartedAt.IsZero() {
		t.Errorf("status = %+v", s)
	}
	if body := get(t, port); !strings.Contains(body, "service=api version=v1 host="+e.host) {
		t.Errorf("GET / = %q", body)
	}
	res, err := d.Stop(ctx, "api", runtime.UseSpecGrace)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !res.WasRunning || res.Killed || res.ExitCode != 0 || res.ID != s.ID {
		t.Errorf("stop = %+v, want a clean drain (exit 0, not killed)", res)
	}
	st := waitStatus(t, d, "api", s.ID, "stopped", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateStopped })
	if st.Health.Status != runtime.HealthNone || st.FinishedAt.IsZero() {
		t.Errorf("stopped status = %+v", st)
	}
	if _, err := d.Stop(ctx, "nope", 0); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Stop(nope) = %v, want ErrNotFound", err)
	}
}

func TestDocker_StartRestartsSameContainer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.newDocker(t, Options{})
	ctx := context.Background()
	v1, port := e.service(t, "api", "v1", nil)
	v2 := v1
	v2.Version = "v2"
	v2.Environment = maps.Clone(v1.Environment)
	v2.Environment[definition.EnvVersion], v2.Environment["MYTHEX_APP_VERSION"] = "v2", "v2"

	if err := d.Start(ctx, v1); err != nil {
		t.Fatalf("Start v1: %v", err)
	}
	first := healthy(t, d, "api")
	if err := d.Start(ctx, v1); err != nil {
		t.Fatalf("Start v1 again while running: %v (must be a no-op)", err)
	}
	if err := d.Start(ctx, v2); !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("Start v2 while v1 runs = %v, want ErrConflict", err)
	}
	if _, err := d.Stop(ctx, "api", runtime.UseSpecGrace); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx, v2); err != nil {
		t.Fatalf("Start v2: %v", err)
	}
	second := healthy(t, d, "api")
	if second.ID == first.ID || second.Version != "v2" {
		t.Fatalf("v2 = %+v, want a new container of v2", second)
	}
	if body := get(t, port); !strings.Contains(body, "version=v2") {
		t.Errorf("GET / = %q, want v2", body)
	}
	// Roll back: stop v2, start v1's spec again: the same container comes back.
	if _, err := d.Stop(ctx, "api", runtime.UseSpecGrace); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx, v1); err != nil {
		t.Fatalf("Start v1 (rollback): %v", err)
	}
	back := healthy(t, d, "api")
	if back.ID != first.ID {
		t.Errorf("rollback runs container %s, want the same container %s", short(back.ID), short(first.ID))
	}
	if back.RestartCount != 1 {
		t.Errorf("restart count = %d, want 1", back.RestartCount)
	}
	if body := get(t, port); !strings.Contains(body, "version=v1") {
		t.Errorf("GET / = %q, want v1 again", body)
	}
	sts, err := d.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 2 || sts[0].ID != second.ID || sts[0].State != runtime.StateStopped || sts[1].ID != first.ID {
		t.Errorf("status = %+v, want v2 stopped then v1 running (by start time)", sts)
	}
}

func TestDocker_StopKillsAtGrace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.newDocker(t, Options{})
	ctx := context.Background()
	svc, _ := e.service(t, "api", "v1", map[string]string{"MYTHEX_APP_IGNORE_SIGTERM": "true"})
	svc.StopGracePeriod = 1500 * time.Millisecond // rounded up to 2s: Docker counts seconds
	if err := d.Start(ctx, svc); err != nil {
		t.Fatal(err)
	}
	s := healthy(t, d, "api")
	res, err := d.Stop(ctx, "api", runtime.UseSpecGrace)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !res.Killed || res.ExitCode != 137 || res.Signal != "SIGKILL" || res.Took < 2*time.Second {
		t.Errorf("stop = %+v, want killed with SIGKILL (137) after the 2s grace", res)
	}
	st := waitStatus(t, d, "api", s.ID, "stopped", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateStopped })
	if st.ExitCode != 137 || st.Signal != "SIGKILL" {
		t.Errorf("status = %+v, want stopped, 137, SIGKILL", st)
	}
}

func TestDocker_ExitedOnItsOwn(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		env        map[string]string
		kill       bool
		wantCode   int
		wantSignal string
	}{
		{name: "docker kill", kill: true, wantCode: 137, wantSignal: "SIGKILL"},
		{name: "crash with code 3", env: map[string]string{"MYTHEX_APP_CRASH_AFTER": "1s", "MYTHEX_APP_CRASH_EXIT_CODE": "3"}, wantCode: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			d := e.newDocker(t, Options{})
			ctx := context.Background()
			svc, _ := e.service(t, "api", "v1", tc.env)
			if err := d.Start(ctx, svc); err != nil {
				t.Fatal(err)
			}
			s := waitStatus(t, d, "api", "", "running", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateRunning })
			if tc.kill {
				if err := e.cli.ContainerKill(ctx, s.ID, "SIGKILL"); err != nil {
					t.Fatal(err)
				}
			}
			st := waitStatus(t, d, "api", s.ID, "exited", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateExited })
			if st.ExitCode != tc.wantCode || st.Signal != tc.wantSignal || st.FinishedAt.IsZero() {
				t.Errorf("status = %+v, want exited with %d %q", st, tc.wantCode, tc.wantSignal)
			}
			res, err := d.Stop(ctx, "api", 0)
			if err != nil || res.WasRunning || res.ExitCode != tc.wantCode {
				t.Errorf("Stop of an exited container = %+v, %v; want nothing done, its exit reported", res, err)
			}
		})
	}
}

func TestDocker_RestartPolicyReportsRestarting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.newDocker(t, Options{})
	ctx := context.Background()
	svc, _ := e.service(t, "worker", "v1", map[string]string{"MYTHEX_APP_CRASH_ON_START": "100ms"})
	svc.Restart = definition.RestartPolicy{Policy: definition.RestartAlways}
	if err := d.Start(ctx, svc); err != nil {
		t.Fatal(err)
	}
	// Docker restarts it with a doubling delay (100ms, 200ms, …): between
	// two runs it is "restarting".
	s := waitStatus(t, d, "worker", "", "restarting", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateRestarting })
	if s.ExitCode != 1 || s.RestartCount < 1 || s.Running() {
		t.Errorf("restarting status = %+v, want exit 1, restarts counted, not running", s)
	}
	// Docker is on it: Start of the same spec does nothing (no second
	// container, no second start).
	if err := d.Start(ctx, svc); err != nil {
		t.Fatalf("Start while Docker restarts it: %v", err)
	}
	res, err := d.Stop(ctx, "worker", time.Second)
	if err != nil || !res.WasRunning {
		t.Fatalf("Stop = %+v, %v", res, err)
	}
	sts, err := d.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 1 || sts[0].ID != s.ID || sts[0].State != runtime.StateStopped {
		t.Errorf("status after stop = %+v, want the one container, stopped (its restarts cancelled)", sts)
	}
}

func TestDocker_StoppedSurvivesAgentRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	state := t.TempDir()
	d := e.newDocker(t, Options{StateDir: state})
	ctx := context.Background()
	for _, name := range []string{"api", "gateway"} {
		svc, _ := e.service(t, name, "v1", map[string]string{"MYTHEX_APP_DRAIN_SERVE_PERIOD": "0s"})
		if err := d.Start(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}
	api := waitStatus(t, d, "api", "", "running", func(s runtime.ServiceStatus) bool { return s.Running() })
	gw := waitStatus(t, d, "gateway", "", "running", func(s runtime.ServiceStatus) bool { return s.Running() })
	if _, err := d.Stop(ctx, "api", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := e.cli.ContainerKill(ctx, gw.ID, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, d, "gateway", gw.ID, "exited", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateExited })
	d.Close()
	if _, err := d.Status(ctx); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Status after Close = %v, want ErrClosed", err)
	}

	// A new agent on the same state directory finds both containers by
	// their labels and still tells the stop from the crash.
	again := e.newDocker(t, Options{StateDir: state})
	sts, err := again.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]runtime.State{api.ID: runtime.StateStopped, gw.ID: runtime.StateExited}
	if len(sts) != 2 {
		t.Fatalf("status = %+v, want both containers", sts)
	}
	for _, s := range sts {
		if s.State != want[s.ID] {
			t.Errorf("%s (%s) = %s, want %s", s.Name, short(s.ID), s.State, want[s.ID])
		}
	}
	// Another host on the same engine sees none of them.
	other := e.newDocker(t, Options{})
	other.scope.host = "someone-else"
	if sts, err := other.Status(ctx); err != nil || len(sts) != 0 {
		t.Errorf("another host's status = %+v, %v; want nothing", sts, err)
	}
}

func TestDocker_ContainerCarriesTheDefinition(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.newDocker(t, Options{})
	ctx := context.Background()
	svc, port := e.service(t, "gateway", "v7", nil)
	svc.StopGracePeriod = 12 * time.Second
	svc.Restart = definition.RestartPolicy{Policy: definition.RestartOnFailure, MaxRetries: 2}
	if err := d.Start(ctx, svc); err != nil {
		t.Fatal(err)
	}
	s := waitStatus(t, d, "gateway", "", "running", func(s runtime.ServiceStatus) bool { return s.Running() })
	c, err := e.cli.ContainerInspect(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		LabelManaged: "true", LabelHost: e.host, LabelService: "gateway", LabelVersion: "v7",
		LabelSpecHash: svc.SpecHash(), LabelStopGracePeriod: "12s", "mythex.role": "backend", labelTestRun: runID,
	}
	for k, v := range wantLabels {
		if c.Config.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Config.Labels[k], v)
		}
	}
	if want := "/" + containerName(e.host, "gateway", svc.SpecHash()); c.Name != want {
		t.Errorf("name = %q, want %q", c.Name, want)
	}
	if c.Config.StopTimeout == nil || *c.Config.StopTimeout != 12 {
		t.Errorf("StopTimeout = %v, want 12", c.Config.StopTimeout)
	}
	if hc := c.Config.Healthcheck; hc == nil || hc.Test[0] != "CMD" || hc.Interval != svc.Healthcheck.Interval || hc.Retries != 3 {
		t.Errorf("healthcheck = %+v", hc)
	}
	if rp := c.HostConfig.RestartPolicy; rp.Name != "on-failure" || rp.MaximumRetryCount != 2 {
		t.Errorf("restart policy = %+v", rp)
	}
	if b := c.HostConfig.PortBindings["8081/tcp"]; len(b) != 1 || b[0].HostIP != "127.0.0.1" || b[0].HostPort != strconv.Itoa(port) {
		t.Errorf("port bindings = %v", c.HostConfig.PortBindings)
	}
	ep := c.NetworkSettings.Networks[e.network]
	if ep == nil || !slices.Contains(ep.Aliases, "gateway") {
		t.Errorf("networks = %v, want %s with alias gateway", c.NetworkSettings.Networks, e.network)
	}
	if !slices.Contains(c.Config.Env, "MYTHEX_HOST="+e.host) {
		t.Errorf("env = %v", c.Config.Env)
	}
	n, err := e.cli.NetworkInspect(ctx, e.network, network.InspectOptions{})
	if err != nil || n.Labels[LabelManaged] != "true" || n.Driver != "bridge" {
		t.Errorf("network = %+v, %v; want a bridge network labeled managed", n, err)
	}
}

func TestDocker_StartRefuses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.newDocker(t, Options{NeverPull: true})
	ctx := context.Background()
	good, _ := e.service(t, "api", "v1", nil)
	cases := []struct {
		name    string
		change  func(*definition.Service)
		wantIs  error
		wantMsg string
	}{
		{"no image", func(s *definition.Service) { s.Image = "" }, runtime.ErrUnsupported, "no image"},
		{"invalid service", func(s *definition.Service) { s.StopGracePeriod = 0 }, definition.ErrInvalid, "stop_grace_period"},
		{"process-only health check", func(s *definition.Service) { s.Healthcheck.Test = nil }, definition.ErrInvalid, "healthcheck.test"},
		{"another host's service", func(s *definition.Service) { s.Environment[definition.EnvHost] = "web-9" }, nil, `resolved for host "web-9"`},
		{"image not on the engine", func(s *definition.Service) { s.Image = "mythex-test/absent:" + runID }, nil, "mythex image build --tag mythex-test/absent:" + runID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := good
			svc.Environment = maps.Clone(good.Environment)
			hc := *good.Healthcheck
			svc.Healthcheck = &hc
			tc.change(&svc)
			err := d.Start(ctx, svc)
			if err == nil || (tc.wantIs != nil && !errors.Is(err, tc.wantIs)) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("Start = %v, want %v containing %q", err, tc.wantIs, tc.wantMsg)
			}
		})
	}
	if sts, err := d.Status(ctx); err != nil || len(sts) != 0 {
		t.Errorf("status = %+v, %v; a refused Start must leave nothing behind", sts, err)
	}
}

func TestDocker_ConcurrentStopsShareOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.newDocker(t, Options{})
	svc, _ := e.service(t, "api", "v1", map[string]string{"MYTHEX_APP_IGNORE_SIGTERM": "true"})
	if err := d.Start(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	s := healthy(t, d, "api") // serving: it ignores SIGTERM by now

	// A caller that gives up gets its context's error; the stop goes on.
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() {
		_, err := d.Stop(ctx, "api", time.Second)
		cancelled <- err
	}()
	waitFor(t, "the stop to begin", func() bool { return d.stopping(s.ID) })
	if err := d.Start(context.Background(), svc); !errors.Is(err, runtime.ErrConflict) {
		t.Errorf("Start while stopping = %v, want ErrConflict", err)
	}
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Stop = %v, want context.Canceled", err)
	}
	// A second Stop joins the one in progress: same result, one kill.
	res, err := d.Stop(context.Background(), "api", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Killed || res.Took > 20*time.Second {
		t.Errorf("joined stop = %+v, want the first stop's (1s grace, killed)", res)
	}
	waitStatus(t, d, "api", s.ID, "stopped", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateStopped })
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDocker_ManagesLegacyContainers: a container an older mythex started,
// labeled mythex.managed, mythex.host, … rather than io.mythex.*, is still
// the runtime's after an upgrade: it shows in Status, a Start of the same
// definition keeps it, and Stop stops it.
func TestDocker_ManagesLegacyContainers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	svc, port := e.service(t, "api", "v1", nil)
	// No Start of this runtime's ran the container, so none of its
	// start_interval checks does either: Docker's own first check, at
	// interval, makes it healthy. 1s, not the test service's 5s.
	svc.Healthcheck.Interval = time.Second
	// The older agent's container: this runtime's spec under the legacy keys.
	spec, err := buildSpec(svc, scope{host: e.host, labels: e.labels()}, e.cli.ClientVersion())
	if err != nil {
		t.Fatal(err)
	}
	spec.Config.Labels = legacy(spec.Config.Labels)
	ctx := context.Background()
	id, err := e.newDocker(t, Options{}).create(ctx, svc, spec)
	if err != nil {
		t.Fatalf("create the legacy container: %v", err)
	}

	d := e.newDocker(t, Options{}) // the upgraded agent

	s := healthy(t, d, "api")
	if s.ID != id || s.Version != "v1" || s.SpecHash != svc.SpecHash() {
		t.Errorf("status = %+v; want the legacy container %s at v1", s, short(id))
	}
	if body := get(t, port); !strings.Contains(body, "version=v1") {
		t.Errorf("GET / = %q", body)
	}
	if err := d.Start(ctx, svc); err != nil {
		t.Fatalf("Start of the running definition: %v", err)
	}
	if sts, err := d.Status(ctx); err != nil || len(sts) != 1 || sts[0].ID != id {
		t.Fatalf("status after Start = %+v, %v; want only the legacy container", sts, err)
	}
	res, err := d.Stop(ctx, "api", runtime.UseSpecGrace)
	if err != nil || !res.WasRunning || res.ID != id {
		t.Fatalf("Stop = %+v, %v; want the legacy container stopped", res, err)
	}
	other := e.newDocker(t, Options{})
	other.scope.host = "someone-else"
	if sts, err := other.Status(ctx); err != nil || len(sts) != 0 {
		t.Errorf("another host's status = %+v, %v; want nothing", sts, err)
	}
}

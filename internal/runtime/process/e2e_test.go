package process

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/wire"
)

// These tests run the real sample app (examples/app) under the process
// runtime, on real sockets, with real signals, at scaled-down timings.

// sampleApp builds the sample app once per test process.
func sampleApp(t *testing.T) string {
	t.Helper()
	bin, err := testbin.Build(testbin.App)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// localDefinition resolves the real examples/local/compose.yaml for host web-1
// and version, with the sample app as its ./bin/app, ports free on this
// machine and the drain scaled down: D=drain, S=1s, grace 10s, checks every
// 100ms.
func localDefinition(t *testing.T, dir, version string, ports map[string]int, drain time.Duration) *definition.Definition {
	t.Helper()
	compose, err := os.ReadFile("../../../examples/local/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), compose, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sampleApp(t), filepath.Join(dir, "bin", "app")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	d, err := definition.Resolve(context.Background(), definition.Input{
		ComposeFile: filepath.Join(dir, "compose.yaml"),
		Version:     version,
		Host:        "web-1",
		Target:      "127.0.0.1:" + strconv.Itoa(ports["gateway"]),
		Vars: map[string]string{
			"API_PORT":              strconv.Itoa(ports["api"]),
			"ORCHESTRATOR_PORT":     strconv.Itoa(ports["orchestrator"]),
			"PUBLISH_WORKER_PORT":   strconv.Itoa(ports["publish-worker"]),
			"HEALTH_START_PERIOD":   "5s",
			"HEALTH_START_INTERVAL": "50ms",
		},
		Fleet: map[string]string{
			definition.VarDrainServePeriod:     drain.String(),
			definition.VarDrainShutdownTimeout: "1s",
			definition.VarStopGracePeriod:      "10s",
			definition.VarKeepAliveIdleTimeout: "75s",
			definition.VarHealthPath:           "/healthz",
			definition.VarHealthInterval:       "100ms",
			definition.VarHealthTimeout:        "1s",
		},
	})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return d
}

// get fetches a non-health path of the service on port and returns the
// version and host it reports.
func get(t *testing.T, port int) (service, version, host string) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		t.Fatalf("GET :%d: %v", port, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET :%d: %d %s", port, resp.StatusCode, body)
	}
	return resp.Header.Get(wire.HeaderService), resp.Header.Get(wire.HeaderVersion), resp.Header.Get(wire.HeaderHost)
}

func waitHealthy(t *testing.T, p *Process, id string) runtime.ServiceStatus {
	t.Helper()
	return waitStatus(t, p, id, "healthy", func(s runtime.ServiceStatus) bool {
		return s.Running() && s.Health.Status == runtime.HealthHealthy
	})
}

// TestProcess_LocalExample runs the first real definition: the four services
// of examples/local/compose.yaml, then a version change of one service and its
// rollback to the kept previous instance.
func TestProcess_LocalExample(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ports := map[string]int{}
	for _, name := range []string{"api", "orchestrator", "gateway", "publish-worker"} {
		ports[name] = freePort(t)
	}
	v1 := localDefinition(t, dir, "v1", ports, 500*time.Millisecond)
	p := newProcess(t, Options{})
	for _, svc := range v1.Services {
		if err := p.Start(context.Background(), svc); err != nil {
			t.Fatalf("Start %s: %v", svc.Name, err)
		}
	}
	for _, svc := range v1.Services {
		waitHealthy(t, p, svc.Name)
		service, version, host := get(t, ports[svc.Name])
		if service != svc.Name || version != "v1" || host != "web-1" {
			t.Errorf("%s answers as service=%s version=%s host=%s", svc.Name, service, version, host)
		}
	}

	// Deploy v2 of api: drain and stop v1 (SIGTERM honoured, the drain served
	// for D, exit 0 well within the grace period), start v2.
	v2 := localDefinition(t, dir, "v2", ports, 500*time.Millisecond)
	apiV1, _ := v1.Service("api")
	apiV2, _ := v2.Service("api")
	res := mustStop(t, p, "api", runtime.UseSpecGrace)
	if !res.WasRunning || res.Killed || res.ExitCode != 0 {
		t.Errorf("stop api v1 = %+v, want a drain ending in exit 0", res)
	}
	if res.Took < 500*time.Millisecond || res.Took >= apiV1.StopGracePeriod {
		t.Errorf("stop took %v: want the 500ms drain serve period, inside the %v grace", res.Took, apiV1.StopGracePeriod)
	}
	if err := p.Start(context.Background(), apiV2); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, p, "api-"+apiV2.SpecHash()[:12])
	if _, version, _ := get(t, ports["api"]); version != "v2" {
		t.Errorf("api reports %s after the deploy, want v2", version)
	}

	// Roll back: the stopped v1 instance is still there and restarts.
	mustStop(t, p, "api", runtime.UseSpecGrace)
	if err := p.Start(context.Background(), apiV1); err != nil {
		t.Fatal(err)
	}
	st := waitHealthy(t, p, "api-"+apiV1.SpecHash()[:12])
	if st.RestartCount != 1 {
		t.Errorf("rolled-back api = %+v, want the v1 instance restarted", st)
	}
	if _, version, _ := get(t, ports["api"]); version != "v1" {
		t.Errorf("api reports %s after the rollback, want v1", version)
	}
	log, _ := os.ReadFile(p.LogPath("api"))
	for _, want := range []string{`msg="app: listening"`, "version=v2", "drain", "stopped: exit code 0"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("api log lacks %q:\n%s", want, log)
		}
	}
}

// appService is a single sample-app service listening on a free port with
// the given extra environment.
func appService(t *testing.T, name string, env map[string]string) definition.Service {
	t.Helper()
	port := freePort(t)
	e := map[string]string{
		definition.EnvVersion: "v1", definition.EnvService: name,
		"MYTHEX_APP_LISTEN": "127.0.0.1:" + strconv.Itoa(port), "MYTHEX_APP_SERVICE": name, "MYTHEX_APP_VERSION": "v1",
		"MYTHEX_APP_DRAIN_SERVE_PERIOD": "2s", "MYTHEX_APP_SHUTDOWN_TIMEOUT": "1s",
	}
	for k, v := range env {
		e[k] = v
	}
	return definition.Service{
		Name: name, Version: "v1", Environment: e,
		StopGracePeriod: 10 * time.Second,
		Restart:         definition.RestartPolicy{Policy: definition.RestartNo},
		Healthcheck: &definition.Healthcheck{
			Interval: 100 * time.Millisecond, Timeout: time.Second, Retries: 2,
			StartPeriod: 5 * time.Second, StartInterval: 50 * time.Millisecond,
		},
		Process: &definition.ProcessSpec{Executable: sampleApp(t), WorkingDir: t.TempDir(), Port: port, HealthPath: "/healthz"},
	}
}

// TestProcess_SampleAppIgnoringSIGTERMIsKilled: an app that ignores SIGTERM
// is killed at the grace deadline, and the result says so.
func TestProcess_SampleAppIgnoringSIGTERMIsKilled(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	svc := appService(t, "gateway", map[string]string{"MYTHEX_APP_IGNORE_SIGTERM": "true"})
	if err := p.Start(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, p, "gateway")
	grace := 700 * time.Millisecond
	res := mustStop(t, p, "gateway", grace)
	if !res.Killed || res.Signal != "SIGKILL" || res.ExitCode != 137 {
		t.Errorf("stop = %+v, want killed by SIGKILL at the deadline (exit 137)", res)
	}
	if res.Took < grace {
		t.Errorf("took %v, less than the %v grace", res.Took, grace)
	}
}

// TestProcess_SampleAppDrainReadsUnhealthy: while the app drains (health 503
// for its serve period) the runtime reports it unhealthy, then stopped, exit 0.
func TestProcess_SampleAppDrainReadsUnhealthy(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	svc := appService(t, "api", map[string]string{"MYTHEX_APP_DRAIN_SERVE_PERIOD": "3s"})
	if err := p.Start(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, p, "api")
	done := make(chan runtime.StopResult, 1)
	go func() {
		res, err := p.Stop(context.Background(), "api", runtime.UseSpecGrace)
		if err != nil {
			t.Errorf("Stop: %v", err)
		}
		done <- res
	}()
	st := waitStatus(t, p, "api", "unhealthy while draining", func(s runtime.ServiceStatus) bool {
		return s.Health.Status == runtime.HealthUnhealthy
	})
	if last := st.Health.Log[len(st.Health.Log)-1]; last.ExitCode != http.StatusServiceUnavailable {
		t.Errorf("last check while draining = %+v, want 503", last)
	}
	res := <-done
	if res.Killed || res.ExitCode != 0 || res.Took < 3*time.Second {
		t.Errorf("stop = %+v, want the 3s drain then exit 0", res)
	}
}

// TestProcess_SampleAppCrash: an app that crashes is reported exited with its
// exit code; the runtime does not restart it; Start does, counting.
func TestProcess_SampleAppCrash(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	svc := appService(t, "publish-worker", map[string]string{"MYTHEX_APP_CRASH_AFTER": "300ms", "MYTHEX_APP_CRASH_EXIT_CODE": "3"})
	if err := p.Start(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, p, "publish-worker", "exited", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateExited })
	if st.ExitCode != 3 || st.RestartCount != 0 || st.Health.Status != runtime.HealthNone {
		t.Errorf("after the crash: %+v, want exited 3, no restart", st)
	}
	firstPID := st.PID
	if err := p.Start(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	st = waitStatus(t, p, "publish-worker", "crashed again", func(s runtime.ServiceStatus) bool {
		return s.RestartCount == 1 && s.State == runtime.StateExited
	})
	if st.ExitCode != 3 || st.PID == firstPID || st.ID != "publish-worker-"+svc.SpecHash()[:12] {
		t.Errorf("after the second crash: %+v, want the same instance, a new pid, exit 3", st)
	}
	if all, _ := p.Status(context.Background()); len(all) != 1 {
		t.Errorf("%d instances, want 1 (a restart reuses the instance)", len(all))
	}
}

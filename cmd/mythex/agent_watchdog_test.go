package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agent"
	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/freeport"
	"github.com/mythex/mythex/internal/runtime"
	"github.com/mythex/mythex/internal/runtime/process"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
	"github.com/mythex/mythex/internal/watchdog"
)

// buildBin returns the binary of pkg (an import path), built once for all
// the checkout's test processes (testbin).
func buildBin(t *testing.T, pkg string) string {
	t.Helper()
	bin, err := testbin.Build(pkg)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

const oneServiceCompose = `name: bootstrap-test
services:
  gateway:
    image: app:${MYTHEX_VERSION}
    environment:
      MYTHEX_APP_VERSION: ${MYTHEX_VERSION}
      MYTHEX_APP_SERVICE: gateway
      MYTHEX_APP_LISTEN: 127.0.0.1:%d
      MYTHEX_APP_DRAIN_SERVE_PERIOD: 100ms
      MYTHEX_APP_SHUTDOWN_TIMEOUT: 100ms
    stop_grace_period: 2s
    healthcheck: {interval: 100ms, timeout: 500ms, retries: 2, start_period: 5s, start_interval: 20ms}
    x-mythex: {executable: %s, port: %d, health_path: /healthz}
`

// publishedStateDir is a state directory whose definition store holds a
// published one-service definition (the sample app's gateway at a free
// port) — a server after a reboot, before anything runs.
func publishedStateDir(t *testing.T) (dir string, port int) {
	t.Helper()
	app := buildBin(t, testbin.App)
	ports, err := freeport.Ports(1) // the service binds it later: claimed across test processes
	if err != nil {
		t.Fatal(err)
	}
	port = ports[0]
	src := t.TempDir()
	compose := filepath.Join(src, "compose.yaml")
	if err := os.WriteFile(compose, fmt.Appendf(nil, oneServiceCompose, port, app, port), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := definition.Resolve(context.Background(), definition.Input{ComposeFile: compose, Version: "v7", Host: "web-1"})
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	store, err := definition.OpenStore(filepath.Join(dir, "definitions"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Publish(d); err != nil {
		t.Fatal(err)
	}
	return dir, port
}

// stopServices stops whatever the process runtime of stateDir runs: the
// services outlive the command that started them.
func stopServices(t *testing.T, stateDir string) []runtime.ServiceStatus {
	t.Helper()
	rt, err := process.New(process.Options{StateDir: filepath.Join(stateDir, "runtime")})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	sts, _ := rt.Status(context.Background())
	for _, s := range sts {
		if s.Running() {
			_, _ = rt.Stop(context.Background(), s.Name, 0)
		}
	}
	return sts
}

func TestAgentBootstrapCmd_BadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no state dir", []string{"agent", "bootstrap"}, "--state-dir is required"},
		{"zero timeout", []string{"agent", "bootstrap", "--state-dir", t.TempDir(), "--timeout", "0s"}, "--timeout"},
		{"unknown runtime", []string{"agent", "bootstrap", "--state-dir", t.TempDir(), "--runtime", "podman"}, "--runtime"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != exitBadUse || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 naming %s", code, stderr, tc.want)
			}
		})
	}
}

func TestAgentBootstrapCmd_NothingPublished(t *testing.T) {
	code, stdout, stderr := runCLI(t, "agent", "bootstrap", "--state-dir", t.TempDir(), "--host", "web-1")
	if code != exitOK || !strings.Contains(stdout, "web-1: nothing published to this host yet") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}

func TestAgentBootstrapCmd_RefusesWhileAnAgentRuns(t *testing.T) {
	dir := t.TempDir()
	release, err := agent.ClaimStateDir(dir, "agent")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	code, _, stderr := runCLI(t, "agent", "bootstrap", "--state-dir", dir)
	if code != exitFailed || !strings.Contains(stderr, "agent (pid") || !strings.Contains(stderr, "--bootstrap") {
		t.Errorf("exit %d, stderr %q; want 1 naming the agent and --bootstrap", code, stderr)
	}
}

// The bootstrap starts the published definition, waits until it answers its
// health check, and leaves it running after it exits.
func TestAgentBootstrapCmd_StartsTheCurrentDefinition(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the sample app")
	}
	t.Parallel() // its own state dir and services; the command a process of its own
	dir, port := publishedStateDir(t)
	t.Cleanup(func() { stopServices(t, dir) })
	code, stdout, stderr := runMythexSplit(t, nil, "agent", "bootstrap", "--state-dir", dir, "--host", "web-1", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var res agent.BootstrapResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if res.Version != "v7" || len(res.Services) != 1 || res.Services[0].Name != "gateway" {
		t.Errorf("result = %+v", res)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err != nil {
		t.Errorf("gateway not listening after the bootstrap exited: %v", err)
	} else {
		c.Close()
	}
	if h := filepath.Join(dir, "host.lock.holder"); fileExists(h) {
		t.Errorf("the host lock's holder file is left: %s", h)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// maintenanceAgent serves a real agent with a watchdog over HTTP.
func maintenanceAgent(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	rt, err := process.New(process.Options{StateDir: filepath.Join(dir, "runtime")})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Host: "web-1", StateDir: dir, Runtime: rt, Watchdog: &watchdog.Policy{Interval: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler("s3cret-0123456789abcdef"))
	t.Cleanup(func() {
		srv.Close()
		a.Close()
		rt.Close()
	})
	t.Setenv(agentTokenEnv, "s3cret-0123456789abcdef")
	return srv.URL
}

func TestAgentMaintenanceCmd(t *testing.T) {
	url := maintenanceAgent(t)
	code, stdout, stderr := runCLI(t, "agent", "maintenance", "--agent", url)
	if code != exitOK || !strings.Contains(stdout, "no maintenance; the watchdog heals") {
		t.Fatalf("status: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "agent", "maintenance", "--agent", url, "on", "--for", "30m", "--reason", "db optimize", "--by", "alice")
	if code != exitOK || !strings.Contains(stdout, "maintenance on until") || !strings.Contains(stdout, "db optimize (by alice)") {
		t.Fatalf("on: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, "agent", "maintenance", "status", "--agent", url, "--json")
	var rep agentapi.MaintenanceReport
	if err := json.Unmarshal([]byte(stdout), &rep); code != exitOK || err != nil || rep.Maintenance == nil || rep.Maintenance.Reason != "db optimize" {
		t.Fatalf("status --json: exit %d, %v, %s", code, err, stdout)
	}
	if left := time.Until(rep.Maintenance.Until); left < 29*time.Minute || left > 30*time.Minute {
		t.Errorf("maintenance ends in %v, want 30m", left)
	}
	code, stdout, _ = runCLI(t, "agent", "maintenance", "--agent", url, "off")
	if code != exitOK || !strings.Contains(stdout, "maintenance off (was: db optimize, by alice); healing resumes") {
		t.Errorf("off: exit %d\n%s", code, stdout)
	}
	code, stdout, _ = runCLI(t, "agent", "maintenance", "--agent", url, "off")
	if code != exitOK || !strings.Contains(stdout, "no maintenance was on") {
		t.Errorf("off again: exit %d\n%s", code, stdout)
	}

	bad := []struct {
		name string
		args []string
		want string
	}{
		{"no duration", []string{"on", "--reason", "x"}, "--for"},
		{"no reason", []string{"on", "--for", "10m"}, "--reason"},
		{"longer than a week", []string{"on", "--for", "200h", "--reason", "x"}, "at most 168h"},
		{"bad duration", []string{"on", "--for", "soon", "--reason", "x"}, "soon"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"agent", "maintenance", "--agent", url}, tc.args...)...)
			if code != exitBadUse || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 naming %s", code, stderr, tc.want)
			}
		})
	}
	t.Run("wrong token", func(t *testing.T) {
		t.Setenv(agentTokenEnv, "nope")
		code, _, stderr := runCLI(t, "agent", "maintenance", "--agent", url, "on", "--for", "10m", "--reason", "x")
		if code != exitBadUse || !strings.Contains(stderr, "token") {
			t.Errorf("exit %d, stderr %q; want 2", code, stderr)
		}
	})
	if code, stdout, _ = runCLI(t, "agent", "maintenance", "--agent", url); code != exitOK || !strings.Contains(stdout, "no maintenance") {
		t.Errorf("refused requests turned maintenance on: %s", stdout)
	}
}

// `mythex agent --bootstrap`, a process of its own, starts the published
// definition, and its watchdog heals a service killed with SIGKILL within
// K × W.
func TestAgentCmd_BootstrapsAndHeals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the mythex CLI and the sample app as processes")
	}
	t.Parallel() // its own processes, ports and state dir; no t.Setenv
	dir, port := publishedStateDir(t)
	listen := freeAddr(t)
	const w, k = 200 * time.Millisecond, 3
	cmd := mythexCommand(append(os.Environ(), agentTokenEnv+"=s3cret-0123456789abcdef"), "agent", "--state-dir", dir, "--host", "web-1", "--listen", listen, "--bootstrap",
		"--watchdog-interval", w.String(), "--watchdog-failures", strconv.Itoa(k), "--stop-services-on-exit")
	logs := &testkit.SyncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		stopServices(t, dir)
	})
	c := agentapi.NewClient(listen, "s3cret-0123456789abcdef", nil)
	ctx := context.Background()
	wait := func(what string, cond func(agentapi.Status) bool) agentapi.Status {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := c.Status(ctx)
			if err == nil && cond(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("never %s: %+v %v\n%s", what, st, err, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	gatewayUp := func(st agentapi.Status) (agentapi.ServiceStatus, bool) {
		for _, s := range st.Services {
			if s.Name == "gateway" && s.Running && s.Health == agentapi.HealthHealthy {
				return s, true
			}
		}
		return agentapi.ServiceStatus{}, false
	}
	st := wait("bootstrapped the gateway", func(st agentapi.Status) bool { _, ok := gatewayUp(st); return ok })
	if st.Watchdog == nil || !st.Watchdog.Enabled || st.Watchdog.Interval != w.String() || st.Watchdog.FailuresBeforeHeal != k {
		t.Errorf("watchdog status = %+v", st.Watchdog)
	}
	wait("watched a round", func(st agentapi.Status) bool { return st.Watchdog.LastRound != nil })
	// The agent's resident memory is the release binary's, checked where
	// that binary runs: e2e's TestDemo_DeployUnderLoadDropsNothing.

	// SIGKILL the gateway: the watchdog brings it back within K × W.
	if err := syscall.Kill(gatewayPID(t, dir), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// No wait for the gateway to show dead first: the heal may come before
	// a loaded machine's next status poll. The restart count says it died.
	wait("healed the gateway", func(st agentapi.Status) bool { s, ok := gatewayUp(st); return ok && s.RestartCount == 1 })
	took := time.Since(killed)
	t.Logf("K×W = %v: gateway healthy again after %v", time.Duration(k)*w, took)
	if took > time.Duration(k)*w+5*time.Second {
		t.Errorf("gateway back after %v; K×W = %v", took, time.Duration(k)*w)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err != nil {
		t.Errorf("gateway not listening: %v", err)
	} else {
		c.Close()
	}
	for _, want := range []string{"decision=strike", "strike=1 of=3", "decision=heal", "watchdog healed"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("agent logs lack %q", want)
		}
	}
}

// gatewayPID returns the pid of the running gateway, read from the
// process runtime's instance records (the agent owns the runtime).
func gatewayPID(t *testing.T, stateDir string) int {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(stateDir, "runtime", "instances", "gateway-*.json"))
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var rec struct {
			PID   int    `json:"pid"`
			State string `json:"state"`
		}
		if json.Unmarshal(b, &rec) == nil && rec.State == string(runtime.StateRunning) && rec.PID > 0 {
			return rec.PID
		}
	}
	t.Fatalf("no running gateway record in %s", stateDir)
	return 0
}

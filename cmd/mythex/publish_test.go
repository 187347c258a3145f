package main

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/lb/lbtest"
	"github.com/mythex/mythex/internal/platform/local"
	"github.com/mythex/mythex/internal/probe"
	"github.com/mythex/mythex/internal/publish"
	"github.com/mythex/mythex/internal/termui"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
	"github.com/mythex/mythex/internal/wire"
)

func TestMain(m *testing.M) {
	runAsMythex() // a child a test started as the mythex CLI (self_test.go)
	// The parallel tests here run local platform machines, image builds
	// on the engine and the AWS CLI, and wait on them. Four at once:
	// sixteen started together, in the first minute of a cold run beside
	// e2e's first fleets and go test's links, took the CPUs' pressure to
	// 0.9, and those fleets' requests and deploys failed.
	testbin.SetParallel(4)
	code := m.Run()
	testbin.Cleanup()
	testkit.Exit(code)
}

// localPlatform starts `mythex publish local-platform` on a fresh state dir
// and stops it (SIGTERM to the process it started) at the end. image is
// what the tests publish: the sample app's binary (the local platform's
// images are executables).
func localPlatform(t *testing.T) (image, stateDir string) {
	t.Helper()
	image, err := testbin.Build(testbin.App)
	if err != nil {
		t.Fatal(err)
	}
	stateDir = t.TempDir()
	cmd := mythexCommand(nil, "publish", "local-platform", "--state-dir", stateDir, "--restart-delay", "100ms", "--stop-timeout", "3s")
	logf, _ := os.Create(filepath.Join(stateDir, "daemon.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(stateDir, "daemon.log"))
			t.Logf("local platform log:\n%s", b)
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(stateDir, local.InfoFile)); err == nil {
			return image, stateDir
		}
		if time.Now().After(deadline) {
			t.Fatalf("the local platform did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fast are scaled-down look delays for tests.
var fast = []string{"--look-interval", "500ms", "--poll-interval", "200ms", "--stable-for", "2s", "--window", "30s", "--restore-timeout", "20s"}

// publishArgs are the arguments of `mythex publish` of image (the sample
// app) as version on the local platform of stateDir, then extra.
func publishArgs(image, stateDir, version string, extra ...string) []string {
	a := []string{"publish", "--app", "api", "--image", image, "--state-dir", stateDir,
		"--restart-policy", "always", "--env", "MYTHEX_APP_VERSION=" + version,
		"--env", "MYTHEX_APP_DRAIN_SERVE_PERIOD=100ms", "--env", "MYTHEX_APP_SHUTDOWN_TIMEOUT=1s", "--json"}
	a = append(a, fast...)
	return append(a, extra...)
}

func decodeResult(t *testing.T, out string) termui.PublishJSON {
	t.Helper()
	var r termui.PublishJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("publish --json output %q: %v", out, err)
	}
	return r
}

// TestPublishCmd_LocalPlatform: the CLI end to end on the local platform —
// a working release goes live, one that crashes at startup fails, is rolled
// back to it, and history and reconcile say so.
func TestPublishCmd_LocalPlatform(t *testing.T) {
	t.Parallel() // its own local platform and state dir; every command a process of its own
	bin, dir := localPlatform(t)
	code, out, errOut := runMythexSplit(t, nil, publishArgs(bin, dir, "v1")...)
	if code != 0 {
		t.Fatalf("publish v1: exit %d\n%s\n%s", code, out, errOut)
	}
	if r := decodeResult(t, out); r.Status != "live" || r.Release != "v1" || r.ReleaseStatus != "live" || r.Strategy != "inplace" {
		t.Fatalf("v1 = %+v", r)
	}

	// Let it sleep and wake, as in the write-up's reproduction.
	for _, a := range [][]string{{"publish", "sleep", "--app", "api", "--state-dir", dir}, {"publish", "sleep", "--app", "api", "--wake", "--state-dir", dir}} {
		if code, out, errOut := runMythexSplit(t, nil, a...); code != 0 || !strings.Contains(out, "1 machine(s) of api") {
			t.Fatalf("%v: exit %d\n%s\n%s", a, code, out, errOut)
		}
	}
	code, out, errOut = runMythexSplit(t, nil, publishArgs(bin, dir, "v2", "--env", "MYTHEX_APP_CRASH_ON_START=300ms")...)
	if code != 1 {
		t.Fatalf("publish of a crashing v2: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	r := decodeResult(t, out)
	if r.Status != "failed" || r.ReleaseStatus != "rolled_back" || r.Rollback == nil || r.Rollback.To != "v1" || r.Rollback.Error != "" {
		t.Fatalf("v2 = %+v", r)
	}
	if reasons := strings.Join(r.Reasons, " "); !strings.Contains(reasons, "since the publish started") ||
		(!strings.Contains(reasons, "still restarting") && !strings.Contains(reasons, "not restarting")) {
		t.Errorf("reasons %q do not say which machine crashed how often and whether it still restarts", reasons)
	}

	code, out, _ = runMythexSplit(t, nil, "publish", "history", "--app", "api", "--state-dir", dir)
	if code != 0 || !strings.Contains(out, "*v1") || !strings.Contains(out, "rolled_back → v1") {
		t.Errorf("history: exit %d\n%s", code, out)
	}
	code, out, errOut = runMythexSplit(t, nil, append([]string{"publish", "reconcile", "--state-dir", dir}, fast...)...)
	if code != 0 || !strings.Contains(out, "api v1: none (verdict live)") {
		t.Errorf("reconcile: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestPublishCmd_BadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no image", []string{"publish", "--app", "api"}, "needs --app NAME and --image"},
		{"bad env", []string{"publish", "--app", "api", "--image", "x", "--env", "NOEQUALS"}, `--env "NOEQUALS": give KEY=VALUE`},
		{"bad policy", []string{"publish", "--app", "api", "--image", "x", "--restart-policy", "sometimes"}, "restart.policy"},
		{"retries without on-failure", []string{"publish", "--app", "api", "--image", "x", "--restart-policy", "always", "--max-retries", "3"}, "--max-retries applies only"},
		{"bad platform", []string{"publish", "--app", "api", "--image", "x", "--platform", "k8s"}, `--platform "k8s"`},
		{"bad timing", []string{"publish", "--app", "api", "--image", "x", "--look-interval", "0s"}, "--look-interval"},
		{"window too short", []string{"publish", "--app", "api", "--image", "x", "--window", "5s"}, "look twice"},
		{"local platform not running", []string{"publish", "--app", "api", "--image", "x"}, "local-platform --state-dir"},
		{"bad app name", []string{"publish", "--app", "My App", "--image", "x", "--platform", "fly", "--fly-token", "t", "--fly-api-url", "http://127.0.0.1:1"}, "lower-case"},
		{"bad app name before the platform is asked", []string{"publish", "--app", "Bad_Name", "--image", "x"}, "lower-case"},
		{"history: bad app name", []string{"publish", "history", "--app", "Bad_Name"}, "lower-case"},
		{"bad call timeout", []string{"publish", "--app", "api", "--image", "x", "--call-timeout", "0s"}, "--call-timeout"},
		{"fly without token", []string{"publish", "--app", "api", "--image", "x", "--platform", "fly", "--fly-token", ""}, "FLY_API_TOKEN"},
		{"stray argument", []string{"publish", "api"}, "takes no arguments"},
	}
	t.Setenv("FLY_API_TOKEN", "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append(tt.args, "--state-dir", dir)...)
			if code != 2 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 naming %q (stdout %q)", code, errOut, tt.want, out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "publish.db")); err == nil {
		// Opening the store is harmless, but no release may be recorded.
		code, out, _ := runCLI(t, "publish", "history", "--state-dir", dir)
		if code != 0 || !strings.Contains(out, "no releases") {
			t.Errorf("releases recorded after bad input:\n%s", out)
		}
	}
}

// history is a read: on a state dir that holds no store it says so and
// creates nothing.
func TestPublishHistoryCmd_NoStoreCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not-yet")
	for _, args := range [][]string{{}, {"--json"}} {
		code, out, errOut := runCLI(t, append([]string{"publish", "history", "--state-dir", dir}, args...)...)
		if code != 0 || !(strings.Contains(out, "no releases") || strings.TrimSpace(out) == "[]") {
			t.Errorf("history %v: exit %d, stdout %q, stderr %q; want 0 and no releases", args, code, out, errOut)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("history created %s (stat: %v)", dir, err)
	}
}

func TestPublishHistoryCmd_StateDirIsAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "publish", "history", "--state-dir", f)
	if code != 2 || !strings.Contains(errOut, "is a file") {
		t.Errorf("exit %d, stderr %q; want 2 saying --state-dir is a file", code, errOut)
	}
}

func TestPublishCmd_ControlPlaneDownIsUnknown(t *testing.T) {
	// Nothing listens on this port: the platform cannot be asked; nothing is changed.
	code, _, errOut := runCLI(t, "publish", "--app", "api", "--image", "registry.fly.io/api:v2", "--platform", "fly",
		"--fly-token", "t", "--fly-api-url", "http://127.0.0.1:1", "--state-dir", t.TempDir())
	if code != 3 || !strings.Contains(errOut, "nothing was changed") {
		t.Errorf("exit %d, %q; want 3, unknown, nothing changed", code, errOut)
	}
}

func TestProgressLine(t *testing.T) {
	at := time.Date(2025, 9, 25, 12, 0, 0, 0, time.UTC)
	e := publish.Event{Kind: publish.EventLook, Elapsed: 11 * time.Second,
		Look: &publish.Look{N: 3, Machines: []publish.MachineLook{{ID: "m1", Health: publish.HealthResult{Ran: true, Error: "connection refused"}}}},
		Verdict: &publish.Verdict{Status: publish.StatusFailed, Machines: []publish.MachineSummary{{ID: "m1", State: "started", CrashesSeen: 4,
			LatestExitCode: 1, LatestCrash: at.Add(10200 * time.Millisecond), RestartCount: 4}}}}
	want := "+ 11.0s  look 3  failed  m1 started, crashed 4× since publish (latest: exit code 1 at 12:00:10.200), restarts 4, health connection refused"
	if got := termui.PublishProgressLine(e); got != want {
		t.Errorf("termui.PublishProgressLine =\n%q\nwant\n%q", got, want)
	}
	step := publish.Event{Kind: publish.EventStep, Elapsed: 1500 * time.Millisecond, Message: "updated machine m1 to v2"}
	if got := termui.PublishProgressLine(step); got != "+  1.5s  updated machine m1 to v2" {
		t.Errorf("step line = %q", got)
	}
}

func version(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		return "error: " + err.Error()
	}
	resp.Body.Close()
	return resp.Header.Get(wire.HeaderVersion)
}

// TestPublishCmd_BlueGreen: with --lb-admin the CLI publishes blue-green
// behind the embedded LB; a release crashing at startup fails while the LB
// keeps serving the previous one.
func TestPublishCmd_BlueGreen(t *testing.T) {
	t.Parallel() // its own local platform and state dir; every command a process of its own
	bin, dir := localPlatform(t)
	traffic, admin := lbtest.Start(t, "lb-token")
	env := append(os.Environ(), lbTokenEnv+"=lb-token")
	code, out, errOut := runMythexSplit(t, env, publishArgs(bin, dir, "v1", "--lb-admin", admin)...)
	if code != 0 {
		t.Fatalf("publish v1: exit %d\n%s\n%s", code, out, errOut)
	}
	if r := decodeResult(t, out); r.Strategy != "bluegreen" || r.Status != "live" {
		t.Fatalf("v1 = %+v", r)
	}
	if v := version(t, traffic); v != "v1" {
		t.Fatalf("the LB serves %q after v1, want v1", v)
	}
	// A 10 s request timeout: a request a loaded machine starves is not one
	// the publish dropped (those are refused, reset or LB-marked at once).
	prober, err := probe.New(probe.Config{URL: "http://" + traffic + "/", Rate: 50, Timeout: 10 * time.Second}, probe.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := prober.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runMythexSplit(t, env, publishArgs(bin, dir, "v2", "--lb-admin", admin, "--env", "MYTHEX_APP_CRASH_ON_START=300ms")...)
	if code != 1 {
		t.Fatalf("publish of a crashing v2: exit %d\n%s\n%s", code, out, errOut)
	}
	if r := decodeResult(t, out); r.ReleaseStatus != "rolled_back" || r.Rollback == nil || r.Rollback.To != "v1" {
		t.Errorf("v2 = %+v", r)
	}
	if v := version(t, traffic); v != "v1" {
		t.Errorf("the LB serves %q after the failed v2, want v1", v)
	}
	code, _, errOut = runMythexSplit(t, env, publishArgs(bin, dir, "v3", "--lb-admin", "http://127.0.0.1:1", "--strategy", "bluegreen")...)
	if code != 3 || !strings.Contains(errOut, "the serving release was not touched") {
		t.Errorf("a publish whose router does not answer: exit %d, %q; want 3", code, errOut)
	}
	if v := version(t, traffic); v != "v1" {
		t.Errorf("the LB serves %q after a publish that could not start, want v1", v)
	}
	if rep := prober.Stop(); rep.ReachedNothing != 0 || rep.AppErrors != 0 || rep.Versions["v2"] != 0 || rep.Requests == 0 {
		t.Errorf("prober during the publishes: %d requests, %d reached nothing, %d app errors, versions %v", rep.Requests, rep.ReachedNothing, rep.AppErrors, rep.Versions)
	}
}

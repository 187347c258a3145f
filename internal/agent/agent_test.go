package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/freeport"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/runtime/process"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
)

func TestMain(m *testing.M) {
	// Every test owns what it runs: its state directory (t.TempDir or
	// memDir), its agent, runtime, clock and test HTTP server, and the
	// ports its sample-app services bind (freeport, claimed across test
	// processes). So they all run in parallel: most of them wait on their
	// services' health checks, drains and lease TTLs, not on CPU, and run
	// one after another they held one of go test's slots for ~25 s. The
	// race test (TestAgent_WatchdogRacesDeploys) is CPU-bound and runs its
	// interleavings one after another beside the rest. 8 at once: the
	// machine has two cores and other packages' tests run beside these.
	testbin.SetParallel(8)
	code := m.Run()
	testbin.Cleanup()
	testkit.Exit(code)
}

const testToken = "agent-test-token"

// composeTmpl is a two-service definition of the sample app; the gateway's
// extra environment lets a test make one version crash.
const composeTmpl = `name: agent-test
x-env: &env
  MYTHEX_APP_VERSION: ${MYTHEX_VERSION}
  MYTHEX_APP_HOST_NAME: ${MYTHEX_HOST}
  MYTHEX_APP_DRAIN_SERVE_PERIOD: ${DRAIN_SERVE_PERIOD:-200ms}
  MYTHEX_APP_SHUTDOWN_TIMEOUT: 200ms
x-hc: &hc
  interval: 100ms
  timeout: 500ms
  retries: 2
  start_period: 5s
  start_interval: 20ms
services:
  api:
    image: app:${MYTHEX_VERSION}
    environment:
      <<: *env
      MYTHEX_APP_SERVICE: api
      MYTHEX_APP_LISTEN: 127.0.0.1:%d
    stop_grace_period: 2s
    healthcheck: *hc
    x-mythex: {executable: %s, port: %d, health_path: /healthz}
  gateway:
    image: app:${MYTHEX_VERSION}
    environment:
      <<: *env
      MYTHEX_APP_SERVICE: gateway
      MYTHEX_APP_LISTEN: 127.0.0.1:%d
      MYTHEX_APP_CRASH_ON_START: ${CRASH:-0}
    stop_grace_period: 2s
    healthcheck: *hc
    x-mythex: {executable: %s, port: %d, health_path: /healthz}
`

type testHost struct {
	cfg    Config
	agent  *Agent
	client *agentapi.Client
	srv    *httptest.Server
	dir    string
	reg    *fakeRegistrar
	def    func(version string, vars map[string]string) []byte
	gwPort int // the gateway's port on 127.0.0.1
}

type fakeRegistrar struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeRegistrar) Register(_ context.Context, t lbport.TargetRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, t.ID+"@"+t.Address)
	return nil
}

func (f *fakeRegistrar) Kind() string { return "fake" }
func (f *fakeRegistrar) Deregister(context.Context, lbport.TargetRef) error {
	return lbport.ErrUnsupported
}
func (f *fakeRegistrar) Describe(context.Context, ...lbport.TargetRef) ([]lbport.Target, error) {
	return nil, lbport.ErrUnsupported
}
func (f *fakeRegistrar) Settings(context.Context) (lbport.Settings, error) {
	return lbport.Settings{}, lbport.ErrUnsupported
}
func (f *fakeRegistrar) Apply(context.Context, lbport.Settings) error { return lbport.ErrUnsupported }

func (f *fakeRegistrar) registered() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// freePort returns a loopback port for a child process to bind, claimed
// against every other test process (freeport.Ports): a port the kernel picks
// (bind to port 0) can be taken by another process before the child binds it.
func freePort(t *testing.T) int {
	t.Helper()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// newTestHost runs an agent on a fresh state directory with the sample app's
// two-service compose file; opts adjust the agent's Config.
func newTestHost(t *testing.T, opts ...func(*Config)) *testHost {
	t.Helper()
	app, err := testbin.Build(testbin.App)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	apiPort, gwPort := freePort(t), freePort(t)
	compose := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(compose, fmt.Appendf(nil, composeTmpl, apiPort, app, apiPort, gwPort, app, gwPort), 0o644); err != nil {
		t.Fatal(err)
	}
	rt, err := process.New(process.Options{StateDir: filepath.Join(dir, "state", "runtime")})
	if err != nil {
		t.Fatal(err)
	}
	reg := &fakeRegistrar{}
	cfg := Config{
		Host: "web-1", StateDir: filepath.Join(dir, "state"), Runtime: rt, RuntimeName: "process",
		Recovery: Recovery{LB: reg, TargetID: "web-1", TargetAddress: fmt.Sprintf("127.0.0.1:%d", gwPort)},
	}
	for _, o := range opts {
		o(&cfg)
	}
	h := &testHost{
		dir: dir, reg: reg, gwPort: gwPort,
		def: func(version string, vars map[string]string) []byte {
			d, err := definition.Resolve(context.Background(), definition.Input{ComposeFile: compose, Version: version, Host: "web-1", Vars: vars})
			if err != nil {
				t.Fatal(err)
			}
			b, err := d.Encode()
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	}
	h.serve(t, cfg)
	return h
}

// serve runs an agent of cfg behind a test HTTP server and makes it h's
// agent. At the end of the test it stops the host's services (they are
// child processes that would outlive the test) and closes the server, the
// agent and cfg's runtime.
func (h *testHost) serve(t *testing.T, cfg Config) {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler(testToken))
	h.cfg, h.agent, h.srv = cfg, a, srv
	h.client = agentapi.NewClient(srv.URL, testToken, nil)
	t.Cleanup(func() {
		srv.Close()
		// The agent's background work ends before the services stop (as
		// in Shutdown): a watchdog heal or a recovery in flight would
		// otherwise start one after its stop, to outlive the test (seen:
		// an api of TestAgent_LeaseSurvivesAgentRestartMidStop, twice).
		a.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, n := range []string{"api", "gateway"} {
			_, _ = cfg.Runtime.Stop(ctx, n, 0)
		}
		_ = cfg.Runtime.Close()
	})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// deployV deploys version the way the rolling deploy does, under lease.
func (h *testHost) deployV(t *testing.T, ctx context.Context, lease string, def []byte) {
	t.Helper()
	if _, err := h.client.Publish(ctx, lease, def); err != nil {
		t.Fatalf("publish: %v", err)
	}
	if err := h.client.Drain(ctx, lease, []string{"gateway"}); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if _, err := h.client.Stop(ctx, lease); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := h.client.Start(ctx, lease); err != nil {
		t.Fatalf("start: %v", err)
	}
}

// deployGood makes version the host's last good, as a whole deploy does:
// under a lease of its own it deploys version (deployV), marks it good and
// lets the lease go. It returns version's definition. Any refusal fails t.
func (h *testHost) deployGood(t *testing.T, ctx context.Context, version string) []byte {
	t.Helper()
	l, err := h.client.AcquireLease(ctx, false, "first deploy", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	def := h.def(version, nil)
	h.deployV(t, ctx, l.ID, def)
	if err := h.client.MarkGood(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.client.ReleaseLease(ctx, false, l.ID); err != nil {
		t.Fatal(err)
	}
	return def
}

func TestAgent_Unauthorized(t *testing.T) {
	t.Parallel()
	h := newTestHost(t)
	cases := []struct{ name, token string }{{"no token", ""}, {"wrong token", "nope"}, {"token prefix", testToken[:5]}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, req := range []struct{ method, path, body string }{
				{"GET", agentapi.PathStatus, ""},
				{"POST", agentapi.PathLease, `{"holder":"x","ttl":"10s"}`},
				{"PUT", agentapi.PathDefinition, string(h.def("v1", nil))},
			} {
				r, _ := http.NewRequest(req.method, h.srv.URL+req.path, strings.NewReader(req.body))
				if tc.token != "" {
					r.Header.Set("Authorization", "Bearer "+tc.token)
				}
				resp, err := http.DefaultClient.Do(r)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s %s = %d, want 401", req.method, req.path, resp.StatusCode)
				}
			}
		})
	}
	st, err := h.client.Status(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.Definitions.Current != nil || st.Lease != nil {
		t.Errorf("unauthorised requests changed the host: %+v", st)
	}
}

func TestAgent_LeaseGuardsChanges(t *testing.T) {
	t.Parallel()
	h := newTestHost(t)
	ctx := ctxT(t)
	if _, err := h.client.Publish(ctx, "", h.def("v1", nil)); !errors.Is(err, agentapi.ErrNoLease) {
		t.Fatalf("publish without lease = %v, want ErrNoLease", err)
	}
	l, err := h.client.AcquireLease(ctx, false, "deploy v1", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.AcquireLease(ctx, false, "deploy v2", 30*time.Second); !errors.Is(err, agentapi.ErrLeaseHeld) || !strings.Contains(err.Error(), "deploy v1") {
		t.Fatalf("second lease = %v, want ErrLeaseHeld naming the holder", err)
	}
	if _, err := h.client.Publish(ctx, "forged", h.def("v1", nil)); !errors.Is(err, agentapi.ErrNoLease) {
		t.Fatalf("publish with forged lease = %v", err)
	}
	if _, err := h.client.Publish(ctx, l.ID, []byte(`{"version":"v1"}`)); !errors.Is(err, agentapi.ErrBadRequest) {
		t.Fatalf("publish of a bad definition = %v, want ErrBadRequest", err)
	}
	st, _ := h.client.Status(ctx)
	if st.Definitions.Current != nil {
		t.Fatalf("refused publishes changed the definition: %+v", st.Definitions)
	}
	if st.Lease == nil || st.Lease.Holder != "deploy v1" || !strings.Contains(st.LockHolder, "deploy v1") {
		t.Errorf("status lease %+v lock %q", st.Lease, st.LockHolder)
	}
	if err := h.client.ReleaseLease(ctx, false, l.ID); err != nil {
		t.Fatal(err)
	}
}

func TestAgent_DeployVerifyRollback(t *testing.T) {
	t.Parallel()
	h := newTestHost(t)
	ctx := ctxT(t)
	l, err := h.client.AcquireLease(ctx, false, "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	v1 := h.def("v1", nil)
	h.deployV(t, ctx, l.ID, v1)
	rep, err := h.client.Verify(ctx, []string{"api", "gateway"}, "v1")
	if err != nil || !rep.OK {
		t.Fatalf("verify v1 = %+v, %v", rep, err)
	}
	if err := h.client.MarkGood(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	h.deployV(t, ctx, l.ID, h.def("v2", nil))
	if rep, _ := h.client.Verify(ctx, nil, "v2"); !rep.OK {
		t.Fatalf("verify v2 = %+v", rep)
	}
	if rep, _ := h.client.Verify(ctx, nil, "v1"); rep.OK {
		t.Fatalf("verify v1 passed while v2 runs: %+v", rep)
	}
	if rep, _ := h.client.Verify(ctx, []string{"publish-worker"}, "v2"); rep.OK || !strings.Contains(rep.Services[0].Reason, "not in the current definition") {
		t.Fatalf("verify of a service not in the definition = %+v", rep)
	}
	if _, err := h.client.Rollback(ctx, l.ID); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	got, err := h.agent.Store().Bytes(definition.RefCurrent)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(v1) {
		t.Errorf("rolled back definition differs from the v1 published:\n%s\nvs\n%s", got, v1)
	}
	if rep, _ := h.client.Verify(ctx, nil, "v1"); !rep.OK {
		t.Fatalf("verify v1 after rollback = %+v", rep)
	}
	st, _ := h.client.Status(ctx)
	if st.Definitions.Previous == nil || st.Definitions.Previous.Version != "v2" || st.Definitions.LastGood.Version != "v1" {
		t.Errorf("definitions after rollback = %+v", st.Definitions)
	}
}

func TestAgent_StartFailsFastWhenTheNewVersionCrashes(t *testing.T) {
	t.Parallel()
	h := newTestHost(t)
	ctx := ctxT(t)
	l, _ := h.client.AcquireLease(ctx, false, "test", time.Minute)
	if _, err := h.client.Publish(ctx, l.ID, h.def("v2", map[string]string{"CRASH": "50ms"})); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	_, err := h.client.Start(ctx, l.ID)
	if err == nil || !strings.Contains(err.Error(), "gateway (version v2) exited with code 1") {
		st, _ := h.client.Status(ctx)
		t.Fatalf("start = %v, want the gateway's crash; status %+v; on the gateway's port: %s", err, st.Services, whoAnswers(h.gwPort))
	}
	if took := time.Since(begin); took > 5*time.Second {
		t.Errorf("start took %v to notice a crash; the start period is 5s", took)
	}
}

func TestAgent_ExpiredLeaseReturnsHostToLastGood(t *testing.T) {
	t.Parallel()
	h := newTestHost(t)
	ctx := ctxT(t)
	v1 := h.deployGood(t, ctx, "v1")

	// A deploy that dies mid-drain: it published v2 and flipped the gateway,
	// renewed its lease for a last 2 s and never again. (Its steps run
	// under a minute's lease: a short one could run out between them on a
	// loaded machine, and the test would fail on the machine's speed.)
	l, err := h.client.AcquireLease(ctx, false, "dying deploy", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Publish(ctx, l.ID, h.def("v2", nil)); err != nil {
		t.Fatal(err)
	}
	if err := h.client.Drain(ctx, l.ID, []string{"gateway"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.RenewLease(ctx, false, l.ID, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := h.client.Status(ctx)
		if err == nil && st.Lease == nil && st.LockHolder == "" && len(h.reg.registered()) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("host not recovered: %+v (registered %v)", st, h.reg.registered())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got, _ := h.agent.Store().Bytes(definition.RefCurrent); string(got) != string(v1) {
		t.Errorf("current after recovery is not the last good v1")
	}
	if rep, err := h.client.Verify(ctx, nil, "v1"); err != nil || !rep.OK {
		t.Errorf("after recovery verify v1 = %+v, %v", rep, err)
	}
	if got := h.reg.registered(); len(got) != 1 || !strings.HasPrefix(got[0], "web-1@127.0.0.1:") {
		t.Errorf("registered %v, want web-1 once", got)
	}
	if _, err := h.client.Publish(ctx, l.ID, h.def("v3", nil)); !errors.Is(err, agentapi.ErrNoLease) {
		t.Errorf("the dead deploy's lease still works: %v", err)
	}
}

func TestAgent_MarkGoodPrunesAllButCurrentPreviousAndLastGood(t *testing.T) {
	t.Parallel()
	h := newTestHost(t)
	ctx := ctxT(t)
	l, _ := h.client.AcquireLease(ctx, false, "test", time.Minute)
	for _, v := range []string{"v1", "v2", "v3"} {
		h.deployV(t, ctx, l.ID, h.def(v, nil))
		if err := h.client.MarkGood(ctx, l.ID); err != nil {
			t.Fatal(err)
		}
	}
	st, err := h.client.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]int{}
	for _, s := range st.Services {
		versions[s.Version]++
	}
	if versions["v1"] != 0 || versions["v2"] != 2 || versions["v3"] != 2 {
		t.Errorf("instances by version = %v; want v1 pruned, v2 (previous) and v3 (current, last good) kept", versions)
	}
	// The previous version is still restorable after the prune.
	if _, err := h.client.Rollback(ctx, l.ID); err != nil {
		t.Fatalf("rollback to v2 after prune: %v", err)
	}
	if rep, _ := h.client.Verify(ctx, nil, "v2"); !rep.OK {
		t.Errorf("v2 after rollback: %+v", rep)
	}
}

// whoAnswers describes what answers GET /healthz on 127.0.0.1:port, for a
// failure message.
func whoAnswers(port int) string {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return fmt.Sprintf("%s %v %q", resp.Status, resp.Header, b)
}

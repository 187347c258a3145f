package fly

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/testkit"
)

// flyMachineJSON is a machine as the Machines API returns it, written from
// fly-go's JSON tags and the API docs, with fields mythex ignores.
const flyMachineJSON = `{
  "id": "d8d9510a295118", "name": "api-d8d9", "state": "started", "region": "ams",
  "image_ref": {"registry": "registry.fly.io", "repository": "api", "tag": "deployment-01H", "digest": "sha256:9f2", "labels": {"fly.version": "v2"}},
  "instance_id": "01HX8ZQ", "version": "01HX8ZQ", "private_ip": "fdaa:0:1:a7b:1::2",
  "created_at": "2025-09-25T11:59:00Z", "updated_at": "2025-09-25T12:00:05Z",
  "config": {"image": "registry.fly.io/api:deployment-01H", "env": {"PORT": "8080"}, "init": {"cmd": ["serve", "--fast"]},
             "restart": {"policy": "on-failure", "max_retries": 10}, "guest": {"cpu_kind": "shared", "cpus": 1, "memory_mb": 256},
             "metadata": {"fly_platform_version": "v2", "mythex_release": "v7"},
             "services": [{"protocol": "tcp", "internal_port": 8080, "ports": [{"port": 443, "handlers": ["tls", "http"]}]}]},
  "events": [
    {"id": "01HE5", "type": "exit", "status": "stopped", "source": "flyd", "timestamp": 1758801604600,
     "request": {"exit_event": {"exit_code": 1, "guest_exit_code": 1, "oom_killed": false, "requested_stop": false, "restarting": true, "exited_at": "2025-09-25T12:00:04.6Z"}, "restart_count": 3}},
    {"id": "01HE4", "type": "start", "status": "started", "source": "flyd", "timestamp": 1758801603400},
    {"id": "01HE3", "type": "exit", "status": "stopped", "source": "flyd", "timestamp": 1758801603000,
     "request": {"MonitorEvent": {"exit_event": {"exit_code": 137, "oom_killed": true, "restarting": true}}, "restart_count": 2}},
    {"id": "01HE2", "type": "start", "status": "started", "source": "flyd", "timestamp": 1758801601800},
    {"id": "01HE1", "type": "launch", "status": "created", "source": "user", "timestamp": 1758801540000}
  ],
  "checks": [{"name": "servicecheck-00-http-8080", "status": "passing", "output": "OK"}],
  "nonce": "", "host_status": "ok", "cordoned": false
}`

func TestApiMachine_ToPlatform(t *testing.T) {
	t.Parallel()
	var am apiMachine
	if err := json.Unmarshal([]byte(flyMachineJSON), &am); err != nil {
		t.Fatal(err)
	}
	m := am.toPlatform("api", true)
	if m.ID != "d8d9510a295118" || m.State != platform.StateStarted || m.InstanceID != "01HX8ZQ" || m.App != "api" {
		t.Errorf("identity = %+v", m)
	}
	if m.ImageRef != "registry.fly.io/api:deployment-01H@sha256:9f2" {
		t.Errorf("ImageRef = %q", m.ImageRef)
	}
	c := m.Config
	if c.Image != "registry.fly.io/api:deployment-01H" || c.Env["PORT"] != "8080" || len(c.Args) != 2 || c.Port != 8080 ||
		c.Restart != (platform.Restart{Policy: platform.RestartOnFailure, MaxRetries: 10}) || m.Release() != "v7" {
		t.Errorf("config = %+v", c)
	}
	if m.Address != "[fdaa:0:1:a7b:1::2]:8080" {
		t.Errorf("Address = %q", m.Address)
	}
	if len(m.Events) != 5 || m.Events[0].Type != platform.EventExit || m.Events[4].Type != platform.EventLaunch {
		t.Fatalf("events = %+v", m.Events)
	}
	e := m.Events[0]
	if !e.Timestamp.Equal(time.UnixMilli(1758801604600)) || e.RestartCount != 3 || e.Exit == nil || e.Exit.ExitCode != 1 || !e.Exit.Restarting ||
		!e.Exit.ExitedAt.Equal(time.Date(2025, 9, 25, 12, 0, 4, 600_000_000, time.UTC)) {
		t.Errorf("newest exit = %+v %+v", e, e.Exit)
	}
	if x := m.Events[2].Exit; x == nil || x.ExitCode != 137 || !x.OOMKilled {
		t.Errorf("MonitorEvent exit = %+v", x)
	}
	if !m.HasRestartCount || m.RestartCount != 3 {
		t.Errorf("restart count = %d (%v), want 3 from the newest exit", m.RestartCount, m.HasRestartCount)
	}
	if !m.CreatedAt.Equal(time.Date(2025, 9, 25, 11, 59, 0, 0, time.UTC)) {
		t.Errorf("CreatedAt = %v", m.CreatedAt)
	}
	if noAddr := am.toPlatform("api", false); noAddr.Address != "" {
		t.Errorf("Address without PrivateAddresses = %q, want empty (6PN is not reachable from here)", noAddr.Address)
	}
}

func TestNew(t *testing.T) {
	t.Setenv(TokenEnv, "")
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no token", Options{}, TokenEnv},
		{"bad URL", Options{BaseURL: "api.machines.dev", Token: "x"}, "absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			if !errors.Is(err, platform.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want ErrInvalid naming %q", err, tt.want)
			}
		})
	}
	t.Setenv(TokenEnv, "from-env")
	c, err := New(Options{})
	if err != nil || c.auth != "Bearer from-env" || c.base.String() != DefaultBaseURL {
		t.Errorf("New from env = %+v, %v", c, err)
	}
	c, _ = New(Options{Token: "FlyV1 fm2_abc"})
	if c.auth != "FlyV1 fm2_abc" {
		t.Errorf("macaroon token header = %q, want it as given", c.auth)
	}
}

func TestClient_Lifecycle(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	c := f.client(t, Options{})
	ctx := context.Background()
	m, err := c.Create(ctx, "api", platform.Config{Image: "registry.fly.io/api:v1", Port: 8080, Env: map[string]string{"A": "1"},
		Restart: platform.Restart{Policy: platform.RestartAlways}, Metadata: map[string]string{platform.MetadataRelease: "v1"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.State != platform.StateCreated || m.Release() != "v1" || m.Config.Port != 8080 {
		t.Fatalf("created = %+v", m)
	}
	f.clock.Advance(bootDelay)
	m, err = c.Get(ctx, "api", m.ID)
	if err != nil || m.State != platform.StateStarted || m.Events[0].Type != platform.EventStart {
		t.Fatalf("after boot: %+v, %v", m, err)
	}
	if err := c.Wait(ctx, "api", m.ID, platform.StateStarted, time.Second); err != nil {
		t.Fatalf("Wait(started) = %v", err)
	}

	// Update keeps what mythex does not manage (guest size here).
	f.mu.Lock()
	f.machines[m.ID].config["guest"] = map[string]any{"cpus": 2, "memory_mb": 1024}
	f.mu.Unlock()
	m, err = c.Update(ctx, "api", m.ID, platform.Config{Image: "registry.fly.io/api:v2", Restart: platform.Restart{Policy: platform.RestartOnFailure, MaxRetries: 3},
		Metadata: map[string]string{platform.MetadataRelease: "v2"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.Image != "registry.fly.io/api:v2" || m.Release() != "v2" || m.Config.Restart.MaxRetries != 3 || m.Config.Port != 8080 {
		t.Errorf("after Update: %+v", m.Config)
	}
	f.mu.Lock()
	guest := f.machines[m.ID].config["guest"]
	f.mu.Unlock()
	if guest == nil {
		t.Errorf("Update dropped the guest config")
	}
	if m.Events[0].Type != platform.EventUpdate || m.Events[1].Exit == nil || !m.Events[1].Exit.RequestedStop {
		t.Errorf("events after update = %+v", m.Events[:2])
	}

	if err := c.Stop(ctx, "api", m.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx, "api", m.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx, "api", m.ID); !errors.Is(err, platform.ErrConflict) || !strings.Contains(err.Error(), "unable to start machine") {
		t.Errorf("Start of a starting machine = %v, want ErrConflict with the API's message", err)
	}
	list, err := c.List(ctx, "api")
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if err := c.Destroy(ctx, "api", m.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "api", m.ID); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("Get after Destroy = %v, want ErrNotFound", err)
	}
	reqs := strings.Join(f.Requests(), "\n")
	for _, want := range []string{"POST /v1/apps/api/machines?", "GET /v1/apps/api/machines/m1/wait?state=started&timeout=1",
		"POST /v1/apps/api/machines/m1/stop?", "POST /v1/apps/api/machines/m1/start?", "DELETE /v1/apps/api/machines/m1?force=true"} {
		if !strings.Contains(reqs, want) {
			t.Errorf("requests lack %q:\n%s", want, reqs)
		}
	}
}

// TestClient_BoundedEvents: a machine crashing every 2 s keeps only its five
// newest events; the client hands them over newest first with the restart
// count of the newest exit — the shape the write-up's bug lived in.
func TestClient_BoundedEvents(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	c := f.client(t, Options{})
	ctx := context.Background()
	m, err := c.Create(ctx, "api", platform.Config{Image: "registry.fly.io/api:crash", Restart: platform.Restart{Policy: platform.RestartAlways}})
	if err != nil {
		t.Fatal(err)
	}
	var prev time.Time
	for i := 0; i < 6; i++ {
		f.clock.Advance(2200 * time.Millisecond)
		got, err := c.Get(ctx, "api", m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Events) > 5 {
			t.Fatalf("%d events, want at most 5", len(got.Events))
		}
		for j := 1; j < len(got.Events); j++ {
			if got.Events[j].Timestamp.After(got.Events[j-1].Timestamp) {
				t.Fatalf("events not newest first: %+v", got.Events)
			}
		}
		var newest time.Time
		for _, e := range got.Events {
			if e.Type == platform.EventExit {
				newest = e.At()
				break
			}
		}
		if i > 1 && !newest.After(prev) {
			t.Errorf("look %d: newest exit %v not after the previous look's %v", i, newest, prev)
		}
		prev = newest
	}
	got, _ := c.Get(ctx, "api", m.ID)
	if !got.HasRestartCount || got.RestartCount < 5 {
		t.Errorf("restart count = %d, want >= 5", got.RestartCount)
	}
}

// TestClient_RateLimit: 429s are retried after the documented backoff (at
// least 1 s, doubling, whatever Retry-After: 0 says), up to Retries; then
// ErrRateLimited. On the fake's clock, driven here: the 6 s of backoff
// pass without real time.
func TestClient_RateLimit(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	c := f.client(t, Options{Retries: 2, Clock: f.clock, NoPacing: true})
	list := func() (time.Duration, error) {
		t.Helper()
		var err error
		began := f.clock.Now()
		testkit.Drive(t, f.clock, 30*time.Second, 100*time.Millisecond, nil, func(ctx context.Context) { _, err = c.List(ctx, "api") })
		return f.clock.Since(began), err
	}
	f.mu.Lock()
	f.rateLimit = 2
	f.mu.Unlock()
	if took, err := list(); err != nil || took < 3*time.Second {
		t.Fatalf("List after two 429s = %v after %s, want success on the third try after 1s+2s of backoff", err, took)
	}
	f.mu.Lock()
	f.rateLimit = 3
	f.mu.Unlock()
	took, err := list()
	if !errors.Is(err, platform.ErrRateLimited) || !platform.IsControlPlane(err) || !strings.Contains(err.Error(), "rate limit exceeded") {
		t.Errorf("List after three 429s = %v, want ErrRateLimited (a control-plane error)", err)
	}
	if took < 3*time.Second {
		t.Errorf("gave up after %s, want after 1s+2s of backoff", took)
	}
}

// TestClient_Timeout is not parallel: it times a 100 ms client timeout in
// real time.
func TestClient_Timeout(t *testing.T) {
	f := newFakeFly(t)
	f.stall = 2 * time.Second
	c := f.client(t, Options{HTTPClient: &http.Client{Timeout: 100 * time.Millisecond}, Retries: -1})
	start := time.Now()
	_, err := c.Get(context.Background(), "api", "m1")
	if !errors.Is(err, platform.ErrTimeout) || !platform.IsControlPlane(err) {
		t.Errorf("Get from a stalled API = %v, want ErrTimeout", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("took %s, want about the client timeout", time.Since(start))
	}
}

func TestClient_ErrorMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code int
		want error
		cp   bool
	}{
		{404, platform.ErrNotFound, false},
		{400, platform.ErrInvalid, false},
		{422, platform.ErrInvalid, false},
		{401, platform.ErrUnauthorized, false},
		{409, platform.ErrConflict, false},
		{412, platform.ErrConflict, false},
		{408, platform.ErrTimeout, true},
		{429, platform.ErrRateLimited, true},
		{500, platform.ErrUnavailable, true},
		{503, platform.ErrUnavailable, true},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.code), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.code)
				w.Write([]byte(`{"error":"the api says no"}`))
			}))
			defer srv.Close()
			c, _ := New(Options{BaseURL: srv.URL, Token: "t", Retries: -1})
			_, err := c.Get(context.Background(), "api", "m1")
			if !errors.Is(err, tt.want) || platform.IsControlPlane(err) != tt.cp || !strings.Contains(err.Error(), "the api says no") {
				t.Errorf("HTTP %d -> %v, want %v (control plane %v) with the API's message", tt.code, err, tt.want, tt.cp)
			}
		})
	}
}

func TestClient_Unauthorized(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	c, _ := New(Options{BaseURL: f.srv.URL, Token: "wrong"})
	if _, err := c.List(context.Background(), "api"); !errors.Is(err, platform.ErrUnauthorized) {
		t.Errorf("List with a wrong token = %v, want ErrUnauthorized", err)
	}
}

func TestClient_WaitTimesOut(t *testing.T) {
	t.Parallel()
	// On the fake's clock, driven here: the client's deadline and the
	// API's 1 s /wait windows pass without a second of real time.
	f := newFakeFly(t)
	c := f.client(t, Options{Clock: f.clock})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := c.Create(ctx, "api", platform.Config{Image: "registry.fly.io/api:v1"})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.machines[m.ID].nextAt = f.clock.Now().Add(time.Hour) // it never boots
	f.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- c.Wait(ctx, "api", m.ID, platform.StateStarted, 1500*time.Millisecond) }()
	for {
		select {
		case err := <-done:
			if !errors.Is(err, platform.ErrTimeout) {
				t.Errorf("Wait for a machine that never boots = %v, want ErrTimeout", err)
			}
			if waited := f.clock.Since(m.CreatedAt); waited < 1500*time.Millisecond {
				t.Errorf("Wait gave up after %s of the platform's time, before its 1.5s", waited)
			}
			return
		default:
		}
		bctx, bcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_ = f.clock.BlockUntilContext(bctx, 1)
		bcancel()
		if ctx.Err() != nil {
			t.Fatal("Wait never returned")
		}
		f.clock.Advance(100 * time.Millisecond)
	}
}

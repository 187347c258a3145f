package publish_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/freeport"
	"github.com/mythex/mythex/internal/lb/lbtest"
	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/embedded"
	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/platform/local"
	"github.com/mythex/mythex/internal/probe"
	"github.com/mythex/mythex/internal/publish"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
)

func TestMain(m *testing.M) {
	// The end-to-end tests here each run their own local platform (a few
	// small processes) and wait on its timings — boots, stable windows,
	// stop timeouts, looks — not on CPU; the rest are short fake-clock
	// simulations. They all run in parallel, up to 16 at once: on two
	// cores go test's default (GOMAXPROCS) ran the end-to-end tests two
	// at a time, and the package held one of go test's two slots for half
	// a minute mostly waiting.
	testbin.SetParallel(16)
	code := m.Run()
	testbin.Cleanup()
	testkit.Exit(code)
}

// machinePort is the local platform's PickPort in these tests: a port
// claimed against every other test process (freeport.Ports) and below the
// kernel's ephemeral range. A machine keeps its port across restarts, and
// a kernel-picked one could be taken — by another process's bind or the
// local end of its outgoing connection — before the machine's process
// binds it or while a crash-looping one restarts: the process then exits
// "address already in use", which the gate reads as a crash.
func machinePort() (int, error) {
	ports, err := freeport.Ports(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// sampleApp is the sample app's release config: version v, extra env.
func sampleApp(t *testing.T, v string, env ...string) platform.Config {
	t.Helper()
	bin, err := testbin.Build(testbin.App)
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{"MYTHEX_APP_VERSION": v, "MYTHEX_APP_DRAIN_SERVE_PERIOD": "100ms", "MYTHEX_APP_SHUTDOWN_TIMEOUT": "1s"}
	for i := 0; i+1 < len(env); i += 2 {
		e[env[i]] = env[i+1]
	}
	return platform.Config{Image: bin, Env: e, Restart: platform.Restart{Policy: platform.RestartAlways}}
}

// e2eOptions are real timings scaled down for a busy 2-core machine.
var e2eOptions = publish.Options{LookInterval: 500 * time.Millisecond, PollInterval: 100 * time.Millisecond, StableFor: 2 * time.Second,
	Window: 30 * time.Second, RestoreTimeout: 20 * time.Second, SwitchTimeout: 20 * time.Second}

func answers(addr, version string) bool {
	c := &http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200 && resp.Header.Get("X-Mythex-Version") == version
}

// TestWriteUpReproduction_InPlace is the write-up's local reproduction on the
// local platform without a load balancer: a working app, let it sleep (and
// wake) until its event list is full of old events, republish a version that
// crashes at startup — failed, and the previous release restored, within one
// machine restart.
func TestWriteUpReproduction_InPlace(t *testing.T) {
	t.Parallel() // its own local platform, state dirs and ports
	sup, err := local.New(local.Options{StateDir: t.TempDir(), StopTimeout: 3 * time.Second, RestartDelay: 100 * time.Millisecond, PickPort: machinePort})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close()
	store, err := publish.OpenStore(filepath.Join(t.TempDir(), publish.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g, err := publish.NewGate(publish.GateConfig{Platform: sup, Store: store, LockDir: t.TempDir(), Options: e2eOptions})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	v1, err := g.Publish(ctx, publish.Request{App: "api", Config: sampleApp(t, "v1")})
	if err != nil || v1.Verdict.Status != publish.StatusLive {
		t.Fatalf("v1: %+v, %v", v1.Verdict, err)
	}
	id := v1.Release.Machines[0]
	m, _ := sup.Get(ctx, "api", id)
	// How long one machine restart takes here: update it to the same release
	// and wait until it answers again.
	began := time.Now()
	if _, err := sup.Update(ctx, "api", id, m.Config); err != nil {
		t.Fatal(err)
	}
	for !answers(m.Address, "v1") {
		if time.Since(began) > 20*time.Second {
			t.Fatal("v1 never answered after a restart")
		}
		time.Sleep(10 * time.Millisecond)
	}
	restart := time.Since(began)

	// Let it sleep, and wake it, twice: the list fills with old events.
	for i := 0; i < 2; i++ {
		if err := sup.Suspend(ctx, "api", id); err != nil {
			t.Fatal(err)
		}
		if err := sup.Start(ctx, "api", id); err != nil {
			t.Fatal(err)
		}
	}
	if m, _ := sup.Get(ctx, "api", id); len(m.Events) != 5 {
		t.Fatalf("event list before the republish has %d events, want a full 5", len(m.Events))
	}

	v2, err := g.Publish(ctx, publish.Request{App: "api", Config: sampleApp(t, "v2", "MYTHEX_APP_CRASH_ON_START", "500ms")})
	if err != nil {
		t.Fatal(err)
	}
	if v2.Verdict.Status != publish.StatusFailed || v2.Release.Status != publish.ReleaseRolledBack || v2.Rollback == nil || v2.Rollback.To != v1.Release.ID {
		t.Fatalf("v2 = %+v, release %s, rollback %+v", v2.Verdict, v2.Release.Status, v2.Rollback)
	}
	if r := strings.Join(v2.Verdict.Reasons, " "); !strings.Contains(r, "machine "+id) || !strings.Contains(r, "since the publish started") {
		t.Errorf("reasons %q do not name the machine and its crashes", r)
	}
	m, _ = sup.Get(ctx, "api", id)
	if !answers(m.Address, "v1") || m.Release() != v1.Release.ID {
		t.Errorf("after the rollback the machine runs %s and answers v1: %v", m.Release(), answers(m.Address, "v1"))
	}
	t.Logf("crash loop failed %s after the publish began; one machine restart takes %s; the rollback took %s (%.2f restarts)",
		v2.Elapsed-v2.Rollback.Took, restart, v2.Rollback.Took, v2.Rollback.Took.Seconds()/restart.Seconds())
	if v2.Rollback.Took > restart+e2eOptions.PollInterval+500*time.Millisecond {
		t.Errorf("rollback took %s, more than one machine restart (%s) plus a poll", v2.Rollback.Took, restart)
	}
}

// lbServer runs the embedded load balancer with scaled-down ALB settings and
// returns its traffic URL and a Router over its admin API.
func lbServer(t *testing.T) (string, lbport.Driver, *lbapi.Client) {
	t.Helper()
	traffic, admin := lbtest.Start(t, "lb-token")
	client := lbapi.NewClient(admin, "lb-token", nil)
	return "http://" + traffic, embedded.New(client), client
}

// TestWriteUpReproduction_BlueGreen is the write-up's reproduction end to end
// on the local platform behind the embedded load balancer: a working app,
// let it sleep (and wake), republish a version that crashes at startup —
// failed, the previous release still serving (it never stopped) — then
// publish a good version, which goes live through the switch.
func TestWriteUpReproduction_BlueGreen(t *testing.T) {
	t.Parallel() // its own local platform, state dirs and ports
	sup, err := local.New(local.Options{StateDir: t.TempDir(), StopTimeout: 3 * time.Second, RestartDelay: 100 * time.Millisecond, PickPort: machinePort})
	if err != nil {
		t.Fatal(err)
	}
	defer sup.Close()
	store, err := publish.OpenStore(filepath.Join(t.TempDir(), publish.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lbURL, router, lbc := lbServer(t)
	g, err := publish.NewGate(publish.GateConfig{Platform: sup, Store: store, Router: router, LockDir: t.TempDir(), Options: e2eOptions})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v1, err := g.Publish(ctx, publish.Request{App: "api", Config: sampleApp(t, "v1")})
	if err != nil || v1.Verdict.Status != publish.StatusLive || v1.Release.Strategy != publish.StrategyBlueGreen {
		t.Fatalf("v1: %+v (%s), %v", v1.Verdict, v1.Release.Strategy, err)
	}
	old := v1.Release.Machines[0]

	// Let it sleep and wake twice, then wait until the LB routes to it again.
	for i := 0; i < 2; i++ {
		if err := sup.Suspend(ctx, "api", old); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if err := sup.Start(ctx, "api", old); err != nil {
			t.Fatal(err)
		}
	}
	waitInRotation(t, lbc, old)

	// A prober against the app through the LB for the whole of both
	// publishes: every request must reach the app.
	// A 10 s request timeout: a request a loaded machine starves is not one
	// the publish dropped (those are refused, reset or LB-marked at once).
	prober, err := probe.New(probe.Config{URL: lbURL + "/", Rate: 50, Timeout: 10 * time.Second}, probe.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := prober.Start(ctx); err != nil {
		t.Fatal(err)
	}

	v2, err := g.Publish(ctx, publish.Request{App: "api", Config: sampleApp(t, "v2", "MYTHEX_APP_CRASH_ON_START", "500ms")})
	if err != nil {
		t.Fatal(err)
	}
	if v2.Verdict.Status != publish.StatusFailed || v2.Release.Status != publish.ReleaseRolledBack || v2.Rollback.To != v1.Release.ID {
		t.Fatalf("v2 = %+v, release %s, rollback %+v", v2.Verdict, v2.Release.Status, v2.Rollback)
	}
	if m, _ := sup.Get(ctx, "api", old); m.State != platform.StateStarted || !answers(lbURL[len("http://"):], "v1") {
		t.Errorf("after the failed v2 the old machine is %s and the app answers v1: %v", m.State, answers(lbURL[len("http://"):], "v1"))
	}

	v3, err := g.Publish(ctx, publish.Request{App: "api", Config: sampleApp(t, "v3")})
	if err != nil || v3.Verdict.Status != publish.StatusLive {
		t.Fatalf("v3: %+v, %v", v3.Verdict, err)
	}
	if !answers(lbURL[len("http://"):], "v3") {
		t.Errorf("after v3 went live the LB does not serve v3")
	}
	if m, _ := sup.Get(ctx, "api", old); m.State != platform.StateStopped {
		t.Errorf("v1's machine after the switch is %s, want stopped (kept)", m.State)
	}
	rep := prober.Stop()
	if rep.ReachedNothing != 0 || rep.AppErrors != 0 || !rep.Complete() || rep.Requests < 100 {
		t.Errorf("prober over both publishes: %d requests, %d reached nothing, %d app errors, reasons %v, complete %v",
			rep.Requests, rep.ReachedNothing, rep.AppErrors, rep.Reasons, rep.Complete())
	}
	if rep.Versions["v2"] != 0 || rep.Versions["v1"] == 0 || rep.Versions["v3"] == 0 {
		t.Errorf("versions served = %v, want v1 then v3 and never the failed v2", rep.Versions)
	}
	t.Logf("v2 failed after %s; the serving release never stopped; v3 went live after %s (switch included); prober: %d requests over %s, %d reached nothing, versions %v",
		v2.Elapsed, v3.Elapsed, rep.Requests, rep.Elapsed.Round(time.Millisecond), rep.ReachedNothing, rep.Versions)
}

func waitInRotation(t *testing.T, c *lbapi.Client, id string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := c.Target(context.Background(), id)
		if err == nil && st.InRotation && st.State == lbport.StateHealthy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("target %s never back in rotation: %+v, %v", id, st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

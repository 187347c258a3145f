package fly

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/publish"
	"github.com/mythex/mythex/internal/testkit"
)

// appChecker answers the app's health URL from the fake Fly's state: the app
// serves when one of its machines is started and does not run a crashing
// image.
type appChecker struct{ f *fakeFly }

func (c appChecker) Check(_ context.Context, url string) publish.HealthResult {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	for _, m := range c.f.machines {
		c.f.advance(m)
		if !m.destroyed && m.state == "started" && strings.Contains(c.f.image(m), "answers500") {
			return publish.HealthResult{Ran: true, Status: 500, Target: url}
		}
		if !m.destroyed && m.state == "started" && !c.f.crashes(m) {
			return publish.HealthResult{Ran: true, OK: true, Status: 200, Target: url}
		}
	}
	return publish.HealthResult{Ran: true, Status: 502, Target: url}
}

// gateOnFake publishes image through the Fly client against the fake, the
// fake's clock driving both.
func gateOnFake(t *testing.T, f *fakeFly, store *publish.Store, lockDir, image string) publish.Result {
	t.Helper()
	c := f.client(t, Options{Clock: f.clock, HTTPClient: nil})
	g, err := publish.NewGate(publish.GateConfig{Platform: c, Store: store, Checker: appChecker{f}, Clock: f.clock, LockDir: lockDir,
		Options: publish.Options{Window: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	var res publish.Result
	var perr error
	testkit.Drive(t, f.clock, 60*time.Second, 100*time.Millisecond, nil, func(ctx context.Context) {
		res, perr = g.Publish(ctx, publish.Request{App: "api", Config: platform.Config{Image: image, Port: 8080,
			Restart: platform.Restart{Policy: platform.RestartAlways}}, Health: publish.Health{AppURL: "https://api.fly.dev/healthz"}})
	})
	if perr != nil {
		t.Fatalf("Publish(%s): %v", image, perr)
	}
	return res
}

func openStore(t *testing.T) *publish.Store {
	t.Helper()
	s, err := publish.OpenStore(filepath.Join(t.TempDir(), publish.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestGate_OnFlyAPI runs the publish gate over the Machines API client
// against the fake: a crash loop seen through Fly's five-event lists is
// failed and the machine updated back to the good image; a 429 storm while
// the app answers gives unknown and no rollback.
func TestGate_OnFlyAPI(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	store, lockDir := openStore(t), t.TempDir()
	good := gateOnFake(t, f, store, lockDir, "registry.fly.io/api:good")
	if good.Verdict.Status != publish.StatusLive {
		t.Fatalf("good image = %v", good.Verdict)
	}
	bad := gateOnFake(t, f, store, lockDir, "registry.fly.io/api:crash")
	if bad.Verdict.Status != publish.StatusFailed || bad.Release.Status != publish.ReleaseRolledBack {
		t.Fatalf("crashing image = %+v, release %s", bad.Verdict, bad.Release.Status)
	}
	if !strings.Contains(strings.Join(bad.Verdict.Reasons, " "), "still restarting") {
		t.Errorf("reasons = %q", bad.Verdict.Reasons)
	}
	m, err := f.client(t, Options{}).Get(context.Background(), "api", "m1")
	if err != nil || m.Config.Image != "registry.fly.io/api:good" || m.Release() != good.Release.ID {
		t.Errorf("after rollback the machine runs %q (%s), %v; want the good image", m.Config.Image, m.Release(), err)
	}

	// The API rate-limits every look once the machine is updated, while the
	// app answers 200 (case adcp-4785-healthy-but-failed).
	f.mu.Lock()
	f.stormAfterUpdate = true
	f.mu.Unlock()
	res := gateOnFake(t, f, store, lockDir, "registry.fly.io/api:good2")
	if res.Verdict.Status != publish.StatusUnknown || res.Rollback != nil || res.Release.Status != publish.ReleasePending {
		t.Fatalf("under a 429 storm: %+v, release %s, rollback %+v; want unknown, pending, none", res.Verdict, res.Release.Status, res.Rollback)
	}
	updates := 0
	for _, r := range f.Requests() {
		if strings.HasPrefix(r, "POST /v1/apps/api/machines/m1?") {
			updates++
		}
	}
	if updates != 3 { // to crash, back to good, to good2: no rollback after the unknown verdict
		t.Errorf("%d updates of m1, want 3 (no rollback on control-plane errors)", updates)
	}

	// Before anything changed: the publish stops with a control-plane error
	// (the CLI's exit 3), nothing updated.
	f.mu.Lock()
	f.rateLimit, f.storm, f.stormAfterUpdate = 1<<30, false, false
	f.mu.Unlock()
	c := f.client(t, Options{Clock: f.clock, Retries: -1})
	g, _ := publish.NewGate(publish.GateConfig{Platform: c, Store: store, Checker: appChecker{f}, Clock: f.clock, LockDir: lockDir})
	_, err = g.Publish(context.Background(), publish.Request{App: "api", Config: platform.Config{Image: "registry.fly.io/api:good3"}})
	if !platform.IsControlPlane(err) {
		t.Errorf("publish with the API down = %v, want a control-plane error", err)
	}
}

package fly

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/publish"
	"github.com/mythex/mythex/internal/testkit"
)

// Regression tests of the publish gate over the Machines API client against
// the faithful fake, one per behaviour of the real API the gate must hold
// under. Each failed before the fix it names.

// flyRun publishes req through a paced client on the fake's clock, driving
// the clock while the gate waits. It returns the result, the error and the
// client (for its call counts).
func flyRun(t *testing.T, f *fakeFly, store *publish.Store, lockDir string, opts publish.Options, req publish.Request) (publish.Result, *Client, error) {
	t.Helper()
	if f.paced == nil {
		// One client for the fake's whole life, as one mythex process: its
		// pacer knows what it has sent.
		f.paced = f.client(t, Options{Clock: f.clock})
	}
	c := f.paced
	if opts.Window == 0 {
		opts.Window = time.Minute
	}
	g, err := publish.NewGate(publish.GateConfig{Platform: c, Store: store, Checker: appChecker{f}, Clock: f.clock, LockDir: lockDir, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	if req.App == "" {
		req.App = "api"
	}
	if req.Health.AppURL == "" {
		req.Health.AppURL = "https://api.fly.dev/healthz"
	}
	var res publish.Result
	var perr error
	testkit.Drive(t, f.clock, 90*time.Second, 100*time.Millisecond, nil, func(ctx context.Context) { res, perr = g.Publish(ctx, req) })
	return res, c, perr
}

func flyReq(image string, policy platform.RestartPolicy, maxRetries int) publish.Request {
	return publish.Request{App: "api", Config: platform.Config{Image: image, Port: 8080, Restart: platform.Restart{Policy: policy, MaxRetries: maxRetries}}}
}

// TestGate_OnFlyAPI_Table runs the gate's crash shapes through the client
// against the fake at the documented rate limits, with event lists of 1, 3,
// 5 and 10 and the platform's clock skewed: the verdicts hold, and no
// request goes over the limits.
func TestGate_OnFlyAPI_Table(t *testing.T) {
	t.Parallel()
	shapes := []struct {
		name  string
		req   publish.Request
		want  publish.Status
		maybe string // a reason substring
	}{
		{"healthy", flyReq("registry.fly.io/api:good2", platform.RestartAlways, 0), publish.StatusLive, ""},
		{"crash every 2 s", flyReq("registry.fly.io/api:crash", platform.RestartAlways, 0), publish.StatusFailed, "still restarting"},
		{"exit 0 every 2 s under always", flyReq("registry.fly.io/api:exit0", platform.RestartAlways, 0), publish.StatusFailed, "exit code 0"},
		{"on-failure gives up", flyReq("registry.fly.io/api:crash", platform.RestartOnFailure, 1), publish.StatusFailed, "not restarting"},
		{"clean exit under on-failure, signal -1", flyReq("registry.fly.io/api:exit0", platform.RestartOnFailure, 3), publish.StatusFailed, "exited (exit code 0)"},
	}
	for _, events := range []int{1, 3, 5, 10} {
		for _, skew := range []time.Duration{0, -25 * time.Second, 10 * time.Minute} {
			for _, sh := range shapes {
				t.Run(sh.name+"/events="+itoa(events)+"/skew="+skew.String(), func(t *testing.T) {
					t.Parallel() // its own fake, clock, store and lock directory
					f := newFakeFly(t)
					f.maxEvents, f.skew, f.limits, f.signalNone = events, skew, true, true
					store, lockDir := openStore(t), t.TempDir()
					good, _, err := flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good", platform.RestartAlways, 0))
					if err != nil || good.Verdict.Status != publish.StatusLive {
						t.Fatalf("good: %+v, %v", good.Verdict, err)
					}
					res, c, err := flyRun(t, f, store, lockDir, publish.Options{}, sh.req)
					if err != nil || res.Verdict.Status != sh.want {
						t.Fatalf("%s = %+v, %v; want %s", sh.name, res.Verdict, err, sh.want)
					}
					if r := strings.Join(res.Verdict.Reasons, " "); events > 1 && !strings.Contains(r, sh.maybe) {
						t.Errorf("reasons %q lack %q", r, sh.maybe)
					}
					if f.overLimits != 0 {
						t.Errorf("%d requests went over the documented rate limits (calls %v)", f.overLimits, c.Calls())
					}
				})
			}
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestGate_OnFly_LeaseHeldByOthersIsNotYet: an update takes the machine's
// lease and sends its nonce and current_version; when flyctl holds the
// lease the gate waits, then says unknown — never failed, nothing rolled
// back; a lease that frees up soon is waited out.
func TestGate_OnFly_LeaseHeldByOthersIsNotYet(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	store, lockDir := openStore(t), t.TempDir()
	if res, _, err := flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good", platform.RestartAlways, 0)); err != nil || res.Verdict.Status != publish.StatusLive {
		t.Fatalf("good: %+v %v", res.Verdict, err)
	}
	f.holdLease("m1", "flyctl@laptop", time.Hour)
	res, _, err := flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good2", platform.RestartAlways, 0))
	if err != nil || res.Verdict.Status != publish.StatusUnknown || res.Rollback != nil {
		t.Fatalf("lease held by flyctl: %+v, rollback %+v, %v; want unknown, no rollback", res.Verdict, res.Rollback, err)
	}
	for _, r := range f.Requests() {
		if strings.HasPrefix(r, "POST /v1/apps/api/machines/m1?") {
			t.Errorf("an update was sent while flyctl held the lease: %s", r)
		}
	}

	f.holdLease("m1", "flyctl@laptop", 2*time.Second)
	n := len(f.nonces)
	res, _, err = flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good3", platform.RestartAlways, 0))
	if err != nil || res.Verdict.Status != publish.StatusLive {
		t.Fatalf("lease freed after 2 s: %+v, %v; want live", res.Verdict, err)
	}
	var sawNonce, sawVersion bool
	for i, b := range f.bodies {
		if cfg, ok := b["config"].(map[string]any); ok && cfg["image"] == "registry.fly.io/api:good3" {
			sawVersion = b["current_version"] != nil && b["current_version"] != ""
			_ = i
		}
	}
	for _, nc := range f.nonces[n:] {
		sawNonce = sawNonce || strings.HasPrefix(nc, "nonce-m1-")
	}
	if !sawNonce || !sawVersion {
		t.Errorf("update sent nonce %v, current_version %v; want both", sawNonce, sawVersion)
	}
	f.mu.Lock()
	leased := f.machines["m1"].lease != nil
	f.mu.Unlock()
	if leased {
		t.Errorf("the publish's lease was not released")
	}
}

// TestGate_OnFly_ErrorsOnAnyEndpoint: 429, 408 and 409 on the update, and
// 429s on reads, are control-plane trouble: never a failed release.
func TestGate_OnFly_ErrorsOnAnyEndpoint(t *testing.T) {
	t.Parallel()
	for _, ft := range []fakeFault{{"POST update", 429, 1}, {"POST update", 408, 1}, {"POST lease", 429, 2}, {"GET read", 429, 6}, {"POST update", 409, 1}} {
		t.Run(ft.match+"/"+itoa(ft.code), func(t *testing.T) {
			t.Parallel()
			f := newFakeFly(t)
			store, lockDir := openStore(t), t.TempDir()
			flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good", platform.RestartAlways, 0))
			f.mu.Lock()
			f.faults = []fakeFault{ft}
			f.mu.Unlock()
			n := len(f.Requests())
			res, _, err := flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good2", platform.RestartAlways, 0))
			if err != nil && platform.IsControlPlane(err) {
				// The API did not answer before anything changed: the CLI's
				// exit 3, "nothing was changed".
				for _, r := range f.Requests()[n:] {
					if !strings.HasPrefix(r, "GET ") {
						t.Errorf("a write after the API refused the first read: %s", r)
					}
				}
				return
			}
			if err != nil || res.Verdict.Status == publish.StatusFailed || res.Rollback != nil {
				t.Fatalf("after %d on %s: %+v, rollback %+v, %v; want live or unknown", ft.code, ft.match, res.Verdict, res.Rollback, err)
			}
		})
	}
}

// TestGate_OnFly_LongUpdatingIsTransient: a machine that reads "updating"
// for 90 s is not failed at look 2.
func TestGate_OnFly_LongUpdatingIsTransient(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	store, lockDir := openStore(t), t.TempDir()
	flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good", platform.RestartAlways, 0))
	f.updatingFor = 90 * time.Second
	res, _, err := flyRun(t, f, store, lockDir, publish.Options{Window: 4 * time.Minute}, flyReq("registry.fly.io/api:good2", platform.RestartAlways, 0))
	if err != nil || res.Verdict.Status != publish.StatusLive {
		t.Fatalf("90 s in updating: %+v, %v; want live", res.Verdict, err)
	}
}

// TestGate_OnFly_AutostopIsNotACrash: Fly Proxy stops the healthy
// replacement before the stable window ends: unknown, not failed, nothing
// rolled back.
func TestGate_OnFly_AutostopIsNotACrash(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	store, lockDir := openStore(t), t.TempDir()
	flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good", platform.RestartAlways, 0))
	f.autostop = 10 * time.Second
	res, _, err := flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good2", platform.RestartAlways, 0))
	if err != nil || res.Verdict.Status != publish.StatusUnknown || res.Rollback != nil || !strings.Contains(strings.Join(res.Verdict.Reasons, " "), "autostop") {
		t.Fatalf("autostopped replacement: %+v, rollback %+v, %v; want unknown naming autostop", res.Verdict, res.Rollback, err)
	}
}

// TestGate_OnFly_IncompleteConfigRefused: with host_status unreachable the
// API gives only incomplete_config; no update is built from it (guest size,
// mounts and checks would be lost): unknown, and the error says why.
func TestGate_OnFly_IncompleteConfigRefused(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	store, lockDir := openStore(t), t.TempDir()
	flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good", platform.RestartAlways, 0))
	f.mu.Lock()
	f.machines["m1"].hostDown = true
	f.mu.Unlock()
	n := len(f.Requests())
	res, _, err := flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good2", platform.RestartAlways, 0))
	if err != nil || res.Verdict.Status != publish.StatusUnknown || res.Rollback != nil {
		t.Fatalf("host unreachable: %+v, %v; want unknown", res.Verdict, err)
	}
	for _, r := range f.Requests()[n:] {
		if strings.HasPrefix(r, "POST /v1/apps/api/machines/m1?") {
			t.Errorf("an update was built from incomplete_config: %s", r)
		}
	}
	c := f.client(t, Options{})
	_, uerr := c.Update(context.Background(), "api", "m1", platform.Config{Image: "registry.fly.io/api:x"})
	if !errors.Is(uerr, platform.ErrIncompleteConfig) || !strings.Contains(uerr.Error(), "could not give the machine's config") {
		t.Errorf("Update of a machine with only incomplete_config = %v", uerr)
	}
}

// TestGate_OnFly_OnlyTheAppsMachines: a release-command and a console
// machine in the list are left alone.
func TestGate_OnFly_OnlyTheAppsMachines(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	store, lockDir := openStore(t), t.TempDir()
	flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good", platform.RestartAlways, 0))
	rc, console := f.addMachine("fly_app_release_command"), f.addMachine("fly_app_console")
	res, _, err := flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good2", platform.RestartAlways, 0))
	if err != nil || res.Verdict.Status != publish.StatusLive {
		t.Fatalf("publish beside other process groups: %+v, %v", res.Verdict, err)
	}
	for _, id := range res.Release.Machines {
		if id == rc || id == console {
			t.Errorf("machine %s of another process group was published", id)
		}
	}
	for _, r := range f.Requests() {
		if strings.Contains(r, "/machines/"+rc) || strings.Contains(r, "/machines/"+console) {
			t.Errorf("request to another process group's machine: %s", r)
		}
	}
}

// TestEvents_SignalMinus1AndIntegerExitedAt: exit events as flyd sends them
// (signal -1 for none; exited_at RFC 3339 or integer ms; timestamp trailing
// exited_at) decode to a clean exit at exited_at.
func TestEvents_SignalMinus1AndIntegerExitedAt(t *testing.T) {
	t.Parallel()
	for _, exitedAt := range []string{`"2025-09-25T12:00:04.6Z"`, `1758801604600`} {
		raw := `{"type":"exit","status":"stopped","source":"flyd","timestamp":1758801607000,
			"request":{"exit_event":{"exit_code":0,"signal":-1,"requested_stop":false,"restarting":false,"exited_at":` + exitedAt + `},"restart_count":0}}`
		var e apiEvent
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			t.Fatalf("%s: %v", exitedAt, err)
		}
		pe := e.toPlatform()
		if pe.Exit == nil || pe.Exit.Signal != 0 || !pe.At().Equal(time.UnixMilli(1758801604600)) {
			t.Errorf("exited_at %s: exit %+v at %v; want signal 0 at exited_at", exitedAt, pe.Exit, pe.At())
		}
		if publish.IsCrash(pe, platform.RestartOnFailure) {
			t.Errorf("a clean exit 0 with signal -1 counted as a crash")
		}
	}
}

// TestClient_WaitFollowsTheAPI: /wait gets a timeout within 1–60 s and, for
// stopped, the current instance_id (the fake refuses anything else).
func TestClient_WaitFollowsTheAPI(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	c := f.client(t, Options{})
	ctx := context.Background()
	m, _ := c.Create(ctx, "api", platform.Config{Image: "registry.fly.io/api:v1"})
	f.mu.Lock()
	f.clock.Advance(2 * time.Second)
	f.mu.Unlock()
	if err := c.Wait(ctx, "api", m.ID, platform.StateStarted, 90*time.Second); err != nil {
		t.Fatalf("Wait started: %v", err)
	}
	if err := c.Stop(ctx, "api", m.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(ctx, "api", m.ID, platform.StateStopped, 5*time.Second); err != nil {
		t.Fatalf("Wait stopped: %v", err)
	}
	for _, r := range f.Requests() {
		if strings.Contains(r, "/wait?") && strings.Contains(r, "state=stopped") && !strings.Contains(r, "instance_id=01HINST") {
			t.Errorf("wait for stopped without the instance: %s", r)
		}
	}
}

// TestGate_OnFly_SleepingMachineUpdatedNotJudged: a machine stopped before
// the publish (autostop, or by hand) is updated with skip_launch — it stays
// stopped, on the new release — and only the serving machine is judged.
func TestGate_OnFly_SleepingMachineUpdatedNotJudged(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	store, lockDir := openStore(t), t.TempDir()
	r := flyReq("registry.fly.io/api:good", platform.RestartAlways, 0)
	r.Machines = 2
	if res, _, err := flyRun(t, f, store, lockDir, publish.Options{}, r); err != nil || res.Verdict.Status != publish.StatusLive {
		t.Fatalf("good on 2 machines: %+v %v", res.Verdict, err)
	}
	if err := f.client(t, Options{}).Stop(context.Background(), "api", "m2"); err != nil {
		t.Fatal(err)
	}
	res, _, err := flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good2", platform.RestartAlways, 0))
	if err != nil || res.Verdict.Status != publish.StatusLive {
		t.Fatalf("publish with m2 asleep: %+v, %v; want live", res.Verdict, err)
	}
	m2, _ := f.client(t, Options{}).Get(context.Background(), "api", "m2")
	if m2.State != platform.StateStopped || m2.Config.Image != "registry.fly.io/api:good2" {
		t.Errorf("m2 after the publish: %s on %s; want stopped on good2", m2.State, m2.Config.Image)
	}
}

// TestGate_OnFly_BlueGreenUnroutedUntilJudged: blue-green on Fly creates the
// new machines with skip_service_registration (Fly Proxy does not route to
// them), judges them by their Fly checks, and only then uncordons them and
// cordons and stops the old ones; a failing release's machines are never
// registered and the serving machine is never cordoned.
func TestGate_OnFly_BlueGreenUnroutedUntilJudged(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	store, lockDir := openStore(t), t.TempDir()
	c := f.client(t, Options{Clock: f.clock})
	f.paced = c
	g, err := publish.NewGate(publish.GateConfig{Platform: c, Store: store, Checker: appChecker{f}, Clock: f.clock, LockDir: lockDir,
		Router: NewProxyRouter(c, "api"), Options: publish.Options{Window: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(image string) publish.Result {
		t.Helper()
		var res publish.Result
		var perr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			r := flyReq(image, platform.RestartAlways, 0)
			r.Strategy = publish.StrategyBlueGreen
			res, perr = g.Publish(context.Background(), r)
		}()
		for {
			select {
			case <-done:
				if perr != nil {
					t.Fatalf("Publish(%s): %v", image, perr)
				}
				return res
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			_ = f.clock.BlockUntilContext(ctx, 1)
			cancel()
			f.clock.Advance(100 * time.Millisecond)
		}
	}
	good := run("registry.fly.io/api:good")
	if good.Verdict.Status != publish.StatusLive {
		t.Fatalf("good = %+v", good.Verdict)
	}
	serving := good.Release.Machines[0]
	bad := run("registry.fly.io/api:crash")
	if bad.Verdict.Status != publish.StatusFailed {
		t.Fatalf("crash = %+v", bad.Verdict)
	}
	for i, b := range f.bodies {
		if cfg, ok := b["config"].(map[string]any); ok && cfg["image"] != nil && len(f.bodies) > i {
			if skip, _ := b["skip_service_registration"].(bool); !skip {
				t.Errorf("a blue-green machine was created routed: %v", b)
			}
		}
	}
	for _, r := range f.Requests() {
		if strings.Contains(r, "/machines/"+serving+"/cordon") {
			t.Errorf("the serving machine was cordoned during a failing release: %s", r)
		}
		if strings.Contains(r, "/machines/"+bad.Release.Machines[0]+"/uncordon") {
			t.Errorf("the failing release's machine was registered: %s", r)
		}
	}
	good2 := run("registry.fly.io/api:good2")
	if good2.Verdict.Status != publish.StatusLive {
		t.Fatalf("good2 = %+v", good2.Verdict)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.machines[good2.Release.Machines[0]]; m.cordoned {
		t.Errorf("the new live machine is still cordoned")
	}
	if m := f.machines[serving]; !m.cordoned || m.state != "stopped" {
		t.Errorf("the old machine after the switch: cordoned %v, %s; want cordoned and stopped", m.cordoned, m.state)
	}
}

// TestGate_OnFly_SlowUpdateAnswerIsNotAFailure: the update is done but its
// answer comes after the 1 s call timeout: judged by what the machine runs —
// live, nothing rolled back.
func TestGate_OnFly_SlowUpdateAnswerIsNotAFailure(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	store, lockDir := openStore(t), t.TempDir()
	flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good", platform.RestartAlways, 0))
	f.mu.Lock()
	f.slowAnswer = map[string]time.Duration{"POST update": 3 * time.Second}
	f.mu.Unlock()
	res, _, err := flyRun(t, f, store, lockDir, publish.Options{CallTimeout: time.Second}, flyReq("registry.fly.io/api:good2", platform.RestartAlways, 0))
	if err != nil || res.Verdict.Status != publish.StatusLive || res.Rollback != nil {
		t.Fatalf("slow update answer: %+v, rollback %+v, %v; want live", res.Verdict, res.Rollback, err)
	}
}

// TestGate_OnFly_Health500FailsAfterTheStartPeriod: the app's URL answers
// 500 from a started machine: failed after the start period and three
// wrong looks, not at the window's end.
func TestGate_OnFly_Health500FailsAfterTheStartPeriod(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	store, lockDir := openStore(t), t.TempDir()
	flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good", platform.RestartAlways, 0))
	began := f.clock.Now()
	res, _, err := flyRun(t, f, store, lockDir, publish.Options{Window: 5 * time.Minute}, flyReq("registry.fly.io/api:answers500", platform.RestartAlways, 0))
	if err != nil || res.Verdict.Status != publish.StatusFailed || !strings.Contains(strings.Join(res.Verdict.Reasons, " "), "HTTP 500") {
		t.Fatalf("health 500 on Fly: %+v, %v", res.Verdict, err)
	}
	if took := f.clock.Since(began) - res.Rollback.Took; took > time.Minute {
		t.Errorf("verdict after %s, want well under the 5 min window", took)
	}
}

// TestGate_OnFly_InterruptRestoresTheLastGoodRelease: the first signal
// during an in-place publish on Fly restores the last good release.
func TestGate_OnFly_InterruptRestoresTheLastGoodRelease(t *testing.T) {
	t.Parallel()
	f := newFakeFly(t)
	store, lockDir := openStore(t), t.TempDir()
	good, _, _ := flyRun(t, f, store, lockDir, publish.Options{}, flyReq("registry.fly.io/api:good", platform.RestartAlways, 0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, err := publish.NewGate(publish.GateConfig{Platform: f.paced, Store: store, Checker: appChecker{f}, Clock: f.clock, LockDir: lockDir,
		Options: publish.Options{Window: time.Minute}, Observer: func(e publish.Event) {
			if e.Kind == publish.EventLook {
				cancel()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var res publish.Result
	var perr error
	go func() {
		defer close(done)
		res, perr = g.Publish(ctx, flyReq("registry.fly.io/api:crash", platform.RestartAlways, 0))
	}()
	for {
		select {
		case <-done:
		default:
			bctx, bcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			_ = f.clock.BlockUntilContext(bctx, 1)
			bcancel()
			f.clock.Advance(100 * time.Millisecond)
			continue
		}
		break
	}
	if !errors.Is(perr, publish.ErrInterrupted) || res.Release.Status != publish.ReleaseInterrupted {
		t.Fatalf("interrupted publish on Fly: %v, release %s", perr, res.Release.Status)
	}
	m, _ := f.client(t, Options{}).Get(context.Background(), "api", "m1")
	if m.Release() != good.Release.ID {
		t.Errorf("m1 runs %s after the interrupt, want %s", m.Release(), good.Release.ID)
	}
}

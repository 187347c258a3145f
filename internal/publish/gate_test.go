package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/testkit"
)

// Images of the simulation and how they behave.
const (
	imgGood      = "app:good"
	imgGood2     = "app:good2"
	imgCrash     = "app:crash-2.5s" // the write-up's app: dies 2.5 s after every boot
	imgCrashBoot = "app:crash-once" // one crash at boot, then stable
	imgSlowBoot  = "app:slow-8s"    // healthy after an 8 s boot
	imgExit0     = "app:exit0"      // exits 0 every 2 s
	imgLate      = "app:crash-12s"  // crashes 12 s after each start: flyctl's blind spot
	imgFast      = "app:crash-0.5s" // dies 0.5 s after boot: exhausts on-failure retries
	imgUnhealthy = "app:unhealthy"  // runs but never answers 2xx
	imgSlowLoop  = "app:crash-40s"  // crashes 40 s after each start: slower than any gate window
)

var behaviors = map[string]behavior{
	imgGood:      {},
	imgGood2:     {},
	imgCrash:     {crashAfter: 2500 * time.Millisecond, exitCode: 1},
	imgCrashBoot: {crashAfter: 800 * time.Millisecond, crashRuns: 1, exitCode: 1},
	imgSlowBoot:  {bootTime: 8 * time.Second},
	imgExit0:     {crashAfter: 2 * time.Second, exitCode: 0},
	imgLate:      {crashAfter: 12 * time.Second, exitCode: 1},
	imgFast:      {crashAfter: 500 * time.Millisecond, exitCode: 1},
	imgUnhealthy: {unhealthy: true},
	imgSlowLoop:  {crashAfter: 40 * time.Second, exitCode: 1},
}

// env is one simulated world: a fake platform, an optional router, a store
// and a gate on a fake clock.
type env struct {
	clock  *clockwork.FakeClock
	p      *fakePlatform
	router *fakeRouter
	store  *Store
	gate   *Gate

	mu     sync.Mutex
	events []Event
	// dark holds the fake times at which no request could have reached a
	// healthy machine through the router (blue-green only), once the app had
	// served.
	dark   []time.Time
	served bool
	// onEvent, when set, sees every progress event as it happens.
	onEvent func(Event)
}

func newEnv(t *testing.T, withRouter bool, opts Options) *env {
	t.Helper()
	e := &env{clock: clockwork.NewFakeClockAt(t0)}
	e.p = newFakePlatform(e.clock)
	e.p.behaviors = behaviors
	e.store = openTestStore(t)
	var router lbport.Driver
	if withRouter {
		e.router = newFakeRouter(e.p)
		router = e.router
	}
	g, err := NewGate(GateConfig{Platform: e.p, Store: e.store, Checker: fakeChecker{e.p}, Router: router, Clock: e.clock,
		Options: opts, LockDir: t.TempDir(), Observer: func(ev Event) {
			e.mu.Lock()
			e.events = append(e.events, ev)
			hook := e.onEvent
			e.mu.Unlock()
			if hook != nil {
				hook(ev)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	e.gate = g
	return e
}

// drive runs fn while moving the fake clock forward in 100 ms steps each
// time everything waits on it, checking between steps whether the router
// serves.
func (e *env) drive(t *testing.T, fn func(ctx context.Context)) {
	t.Helper()
	testkit.Drive(t, e.clock, 60*time.Second, 100*time.Millisecond, e.watch, fn)
}

func (e *env) watch() {
	if e.router == nil {
		return
	}
	ok, _ := e.router.Serving()
	e.mu.Lock()
	defer e.mu.Unlock()
	if ok {
		e.served = true
	} else if e.served {
		e.dark = append(e.dark, e.clock.Now())
	}
}

func (e *env) publish(t *testing.T, req Request) Result {
	t.Helper()
	var res Result
	var err error
	e.drive(t, func(ctx context.Context) { res, err = e.gate.Publish(ctx, req) })
	if err != nil {
		t.Fatalf("Publish(%s) error: %v", req.Config.Image, err)
	}
	return res
}

func req(image string) Request {
	return Request{App: "api", Config: platform.Config{Image: image, Restart: platform.Restart{Policy: platform.RestartAlways}}}
}

// firstStartedLook is when a look first saw every machine started.
func (e *env) firstStartedLook(release string) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.events {
		if ev.Kind != EventLook || ev.Release != release {
			continue
		}
		all := len(ev.Look.Machines) > 0
		for _, ml := range ev.Look.Machines {
			all = all && ml.Machine.State == platform.StateStarted
		}
		if all {
			return ev.At
		}
	}
	return time.Time{}
}

func (e *env) verdictAt(release string) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	var at time.Time
	for _, ev := range e.events {
		if ev.Kind == EventLook && ev.Release == release && ev.Verdict.Status != StatusPending {
			at = ev.At
		}
	}
	return at
}

func TestGate_Publish(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	tests := []struct {
		name     string
		image    string
		policy   platform.Restart
		opts     Options
		want     Status
		wantRel  ReleaseStatus
		reason   []string
		warn     []string
		maxLooks time.Duration // verdict within this many look intervals of the first started look (0: no bound)
	}{
		{name: "crash every 2.5 s -> failed within 3 look intervals, rolled back", image: imgCrash, want: StatusFailed,
			wantRel: ReleaseRolledBack, reason: []string{"crashed at least", "still restarting", "exit code 1"}, maxLooks: 3},
		{name: "exit-0 loop under always -> failed", image: imgExit0, want: StatusFailed, wantRel: ReleaseRolledBack,
			reason: []string{"latest exit code 0"}, maxLooks: 3},
		{name: "healthy after a slow 8 s boot -> live", image: imgSlowBoot, want: StatusLive, wantRel: ReleaseLive},
		{name: "one crash at boot then stable -> live with a warning", image: imgCrashBoot, want: StatusLive, wantRel: ReleaseLive,
			warn: []string{"crashed once since the publish started"}},
		{name: "on-failure retries exhausted -> failed", image: imgFast, policy: platform.Restart{Policy: platform.RestartOnFailure, MaxRetries: 1},
			want: StatusFailed, wantRel: ReleaseRolledBack, reason: []string{"not restarting it", "on-failure, max_retries 1"}},
		{name: "crash 12 s after start (flyctl's blind spot) -> failed by the gate (stable-for 30s)", image: imgLate, want: StatusFailed,
			wantRel: ReleaseRolledBack, reason: []string{"still restarting"}},
		// Case restarters-905-fly-walkaway: started, never healthy; the gate
		// fails it and restores service within one restart.
		{name: "never answers its health check -> failed at the window's end", image: imgUnhealthy, opts: Options{Window: time.Minute},
			want: StatusFailed, wantRel: ReleaseRolledBack, reason: []string{"never passed its health check"}},
	}
	for _, strategy := range []Strategy{StrategyInPlace, StrategyBlueGreen} {
		for _, tt := range tests {
			t.Run(string(strategy)+"/"+tt.name, func(t *testing.T) {
				e := newEnv(t, strategy == StrategyBlueGreen, tt.opts)
				good := e.publish(t, req(imgGood))
				if good.Verdict.Status != StatusLive {
					t.Fatalf("first publish = %v, want live", good.Verdict)
				}
				r := req(tt.image)
				if tt.policy.Policy != "" {
					r.Config.Restart = tt.policy
				}
				res := e.publish(t, r)
				if res.Verdict.Status != tt.want || res.Release.Status != tt.wantRel {
					t.Fatalf("Publish(%s) = %v, release %s; want %s, release %s", tt.image, res.Verdict, res.Release.Status, tt.want, tt.wantRel)
				}
				reasons, warns := strings.Join(res.Verdict.Reasons, "\n"), strings.Join(res.Verdict.Warnings, "\n")
				for _, s := range tt.reason {
					if !strings.Contains(reasons, s) {
						t.Errorf("reasons %q lack %q", reasons, s)
					}
				}
				for _, s := range tt.warn {
					if !strings.Contains(warns, s) {
						t.Errorf("warnings %q lack %q", warns, s)
					}
				}
				if tt.maxLooks > 0 {
					first, decided := e.firstStartedLook(res.Release.ID), e.verdictAt(res.Release.ID)
					if took := decided.Sub(first); took > tt.maxLooks*e.gate.Options().LookInterval {
						t.Errorf("verdict %s after the first started look, want within %d look intervals (%s)", took, tt.maxLooks, tt.maxLooks*e.gate.Options().LookInterval)
					}
				}
				checkAfter(t, e, res, good.Release)
			})
		}
	}
}

// checkAfter asserts what must hold once a publish has ended: a failed
// release is rolled back to the good one, which serves; nothing of the good
// release was destroyed; blue-green never left the app without a healthy
// target.
func checkAfter(t *testing.T, e *env, res Result, good Release) {
	t.Helper()
	checkAfterFrom(t, e, res, good, time.Time{})
}

// checkAfterFrom is checkAfter counting instants without a healthy target only
// from darkFrom on (a release that went live wrongly serves badly until the
// reconciler rolls it back; that is its fault, not the rollback's).
func checkAfterFrom(t *testing.T, e *env, res Result, good Release, darkFrom time.Time) {
	t.Helper()
	ctx := context.Background()
	cur, _, err := e.store.Current(ctx, "api")
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := e.p.List(ctx, "api")
	switch res.Release.Status {
	case ReleaseRolledBack:
		if res.Release.RolledBackTo != good.ID || cur.ID != good.ID {
			t.Errorf("rolled back to %q, current %q; want %s", res.Release.RolledBackTo, cur.ID, good.ID)
		}
		if res.Rollback == nil || res.Rollback.Error != "" {
			t.Errorf("rollback report = %+v, want a completed one", res.Rollback)
		}
		started := 0
		for _, m := range ms {
			if m.State != platform.StateStarted {
				continue
			}
			started++
			if m.Config.Image != good.Config.Image {
				t.Errorf("after rollback machine %s runs %s, want %s", m.ID, m.Config.Image, good.Config.Image)
			}
		}
		if started == 0 {
			t.Errorf("after rollback no machine is started: %+v", ms)
		}
		// The rollback restored within one machine restart (in place) or
		// without touching the serving machines (blue-green).
		restart := e.p.startDelay + e.gate.Options().PollInterval + 200*time.Millisecond
		if e.router != nil {
			restart += e.router.healthyAfter
		}
		if res.Rollback != nil && res.Rollback.Took > restart {
			t.Errorf("rollback took %s, want within one machine restart (%s: start, health check, into rotation)", res.Rollback.Took, restart)
		}
	case ReleaseLive:
		if cur.ID != res.Release.ID {
			t.Errorf("current = %s, want the live %s", cur.ID, res.Release.ID)
		}
	}
	for _, c := range e.p.Calls() {
		if strings.HasPrefix(c, "destroy ") && strings.HasSuffix(c, " "+good.Config.Image) && res.Release.Status != ReleaseLive {
			t.Errorf("a machine of the good release was destroyed: %q", c)
		}
	}
	var dark []time.Time
	for _, d := range e.dark {
		if !d.Before(darkFrom) {
			dark = append(dark, d)
		}
	}
	if len(dark) > 0 {
		t.Errorf("the router had no healthy target at %d instants, first at +%s", len(dark), dark[0].Sub(t0))
	}
}

// TestGate_BlueGreenNeverTouchesServing is cases nomad-6864-canary-kills-healthy,
// swarm-34111-rollback-start-first and ecs-deploy-185-deregisters-active:
// while the new release fails, the old machines are never stopped, restarted
// or deregistered, and the app always has a healthy target.
func TestGate_BlueGreenNeverTouchesServing(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	e := newEnv(t, true, Options{})
	good := e.publish(t, req(imgGood))
	oldIDs := good.Release.Machines
	n := len(e.p.Calls())
	rcalls := len(e.router.Calls())
	res := e.publish(t, req(imgCrash))
	if res.Release.Status != ReleaseRolledBack {
		t.Fatalf("release status = %s, want rolled_back", res.Release.Status)
	}
	for _, c := range e.p.Calls()[n:] {
		for _, id := range oldIDs {
			if strings.HasSuffix(strings.Fields(c)[1], id) && strings.Fields(c)[1] == id {
				t.Errorf("the serving machine %s was touched during a failed publish: %q", id, c)
			}
		}
	}
	for _, c := range e.router.Calls()[rcalls:] {
		for _, id := range oldIDs {
			if c == "deregister "+id {
				t.Errorf("the serving machine %s was deregistered during a failed publish", id)
			}
		}
	}
	if res.Rollback == nil || !slices.Equal(res.Rollback.Machines, oldIDs) {
		t.Errorf("rollback report %+v does not name the serving machines %v", res.Rollback, oldIDs)
	}
	if ok, targets := e.router.Serving(); !ok || !slices.Equal(targets, oldIDs) {
		t.Errorf("after the failed publish the router serves %v (ok=%v), want the old %v", targets, ok, oldIDs)
	}
	if len(e.dark) > 0 {
		t.Errorf("no healthy target at %d instants", len(e.dark))
	}
}

// TestGate_LastGoodNotPrevious: a rollback restores the last known good
// release, not simply the one before in time (which had failed).
func TestGate_LastGoodNotPrevious(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	for _, strategy := range []Strategy{StrategyInPlace, StrategyBlueGreen} {
		t.Run(string(strategy), func(t *testing.T) {
			e := newEnv(t, strategy == StrategyBlueGreen, Options{})
			v1 := e.publish(t, req(imgGood))
			v2 := e.publish(t, req(imgCrash))
			v3 := e.publish(t, req(imgExit0))
			if v1.Release.Status != ReleaseLive || v2.Release.Status != ReleaseRolledBack || v3.Release.Status != ReleaseRolledBack {
				t.Fatalf("statuses = %s, %s, %s; want live, rolled_back, rolled_back", v1.Release.Status, v2.Release.Status, v3.Release.Status)
			}
			if v3.Release.RolledBackTo != v1.Release.ID || v3.Release.LastGood != v1.Release.ID {
				t.Errorf("v3 rolled back to %q (last good %q), want %s", v3.Release.RolledBackTo, v3.Release.LastGood, v1.Release.ID)
			}
			v4 := e.publish(t, req(imgGood2))
			if v4.Release.Status != ReleaseLive {
				t.Fatalf("v4 = %s, want live", v4.Release.Status)
			}
			ms, _ := e.p.List(context.Background(), "api")
			for _, m := range ms {
				if m.State == platform.StateStarted && m.Config.Image != imgGood2 {
					t.Errorf("machine %s serves %s after v4 went live", m.ID, m.Config.Image)
				}
			}
		})
	}
}

// TestGate_ControlPlaneErrorsNeverRollBack is case adcp-4785-healthy-but-failed:
// the Machines API answers 429 while the app serves 200 — the verdict is
// unknown and nothing is rolled back.
func TestGate_ControlPlaneErrorsNeverRollBack(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	e := newEnv(t, false, Options{Window: time.Minute})
	good := e.publish(t, req(imgGood))
	e.p.failGet = func(time.Time, string) error {
		return errors.Join(platform.ErrRateLimited, errors.New("429 Too Many Requests"))
	}
	n := len(e.p.Calls())
	r := req(imgGood2)
	r.Health.AppURL = "http://api.app.test/healthz"
	res := e.publish(t, r)
	if res.Verdict.Status != StatusUnknown || res.Release.Status != ReleasePending || res.Rollback != nil {
		t.Fatalf("Publish under 429s = %v, release %s, rollback %+v; want unknown, pending, none", res.Verdict, res.Release.Status, res.Rollback)
	}
	if !strings.Contains(strings.Join(res.Verdict.Reasons, " "), "the app answers its health check") {
		t.Errorf("reasons %q do not report the direct probe", res.Verdict.Reasons)
	}
	for _, c := range e.p.Calls()[n+1:] { // after the update to v2
		t.Errorf("a call after an unknown verdict: %q (nothing may be rolled back)", c)
	}
	if cur, _, _ := e.store.Current(context.Background(), "api"); cur.ID != good.Release.ID {
		t.Errorf("current = %s, want still %s (v2 is not proven)", cur.ID, good.Release.ID)
	}
}

// TestGate_TimeoutsThenAnswers: control-plane timeouts that clear leave a
// live verdict with a warning.
// An update the platform did not answer in time is not a verdict: the gate
// judges what the machines run. A good release goes live, a crashing one is
// rolled back for its crashes — never for the timeout.
func TestGate_UpdateTimeoutIsJudgedNotRolledBack(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	cases := []struct {
		name       string
		image      string
		wantStatus Status
		rollback   bool
	}{
		{"good release goes live", imgGood2, StatusLive, false},
		{"crashing release fails for its crashes", imgCrash, StatusFailed, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false, Options{Window: time.Minute})
			e.publish(t, req(imgGood))
			e.p.updateErr = fmt.Errorf("POST /machines: %w: context deadline exceeded", platform.ErrTimeout)
			res := e.publish(t, req(tc.image))
			if res.Verdict.Status != tc.wantStatus || (res.Rollback != nil) != tc.rollback {
				t.Fatalf("verdict %v, rollback %+v; want %v, rollback %v", res.Verdict, res.Rollback, tc.wantStatus, tc.rollback)
			}
			if strings.Contains(strings.Join(res.Verdict.Reasons, " "), "update to") {
				t.Errorf("reasons %q blame the update's timeout", res.Verdict.Reasons)
			}
		})
	}
}

func TestGate_TimeoutsThenAnswers(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	e := newEnv(t, false, Options{})
	e.publish(t, req(imgGood))
	began := e.clock.Now()
	e.p.failGet = func(now time.Time, _ string) error {
		// Every other second of the first 15 s the API times out.
		if since := now.Sub(began); since < 15*time.Second && int(since/time.Second)%2 == 0 {
			return fmt.Errorf("get: %w", platform.ErrTimeout)
		}
		return nil
	}
	res := e.publish(t, req(imgGood2))
	if res.Verdict.Status != StatusLive {
		t.Fatalf("Publish = %v, want live", res.Verdict)
	}
	if w := strings.Join(res.Verdict.Warnings, " "); !strings.Contains(w, "the platform did not answer") {
		t.Errorf("warnings %q do not mention the timeouts", w)
	}
}

func TestGate_FirstPublishWithoutGoodRelease(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	e := newEnv(t, false, Options{})
	res := e.publish(t, req(imgCrash))
	if res.Verdict.Status != StatusFailed || res.Release.Status != ReleaseFailed || res.Rollback != nil {
		t.Fatalf("first publish of a crashing app = %v, release %s; want failed, nothing to roll back to", res.Verdict, res.Release.Status)
	}
	if !strings.Contains(res.Release.Reason, "no known good release") {
		t.Errorf("reason %q does not say there was nothing to restore", res.Release.Reason)
	}
}

func TestGate_NoRollback(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	e := newEnv(t, false, Options{})
	e.publish(t, req(imgGood))
	r := req(imgCrash)
	r.NoRollback = true
	n := len(e.p.Calls())
	res := e.publish(t, r)
	if res.Verdict.Status != StatusFailed || res.Release.Status != ReleaseFailed || res.Rollback != nil {
		t.Fatalf("Publish --no-rollback = %v, %s, %+v", res.Verdict, res.Release.Status, res.Rollback)
	}
	if calls := e.p.Calls()[n:]; len(calls) != 1 || !strings.HasPrefix(calls[0], "update ") {
		t.Errorf("calls = %q, want only the update to the new release", calls)
	}
}

func TestGate_BadInputChangesNothing(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"no app", Request{Config: platform.Config{Image: "x"}}, "app"},
		{"bad app name", Request{App: "API v2", Config: platform.Config{Image: "x"}}, "lower-case"},
		{"no image", Request{App: "api"}, "image"},
		{"bad policy", Request{App: "api", Config: platform.Config{Image: "x", Restart: platform.Restart{Policy: "never"}}}, "restart.policy"},
		{"bluegreen without router", Request{App: "api", Config: platform.Config{Image: "x"}, Strategy: StrategyBlueGreen}, "needs a router"},
		{"bad strategy", Request{App: "api", Config: platform.Config{Image: "x"}, Strategy: "canary"}, "strategy"},
		{"bad health path", Request{App: "api", Config: platform.Config{Image: "x"}, Health: Health{Path: "healthz"}}, "must start with /"},
		{"bad app URL", Request{App: "api", Config: platform.Config{Image: "x"}, Health: Health{AppURL: "api.fly.dev"}}, "absolute http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, false, Options{})
			_, err := e.gate.Publish(context.Background(), tt.req)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Publish error = %v, want ErrInvalid naming %q", err, tt.want)
			}
			if c := e.p.Calls(); len(c) != 0 {
				t.Errorf("platform calls after bad input: %q", c)
			}
			if rs, _ := e.store.List(context.Background(), ""); len(rs) != 0 {
				t.Errorf("releases stored after bad input: %v", ids(rs))
			}
		})
	}
}

func TestNewGate_Options(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	if _, err := NewGate(GateConfig{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewGate without dependencies = %v, want ErrInvalid", err)
	}
	p := newFakePlatform(clockwork.NewFakeClock())
	_, err := NewGate(GateConfig{Platform: p, Store: openTestStore(t), LockDir: t.TempDir(), Options: Options{Window: 5 * time.Second, LookInterval: 5 * time.Second}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "look twice") {
		t.Errorf("window shorter than two looks: %v, want ErrInvalid", err)
	}
	_, err = NewGate(GateConfig{Platform: p, Store: openTestStore(t), LockDir: t.TempDir(), Options: Options{LookInterval: -time.Second}})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "look-interval") {
		t.Errorf("negative look interval: %v, want ErrInvalid naming it", err)
	}
	g, err := NewGate(GateConfig{Platform: p, Store: openTestStore(t), LockDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if g.Options().LookInterval != 5*time.Second || g.Options().StableFor != 30*time.Second || g.Options().Window != 5*time.Minute {
		t.Errorf("defaults = %+v", g.Options())
	}
}

func TestGate_Busy(t *testing.T) {
	t.Parallel() // its own fake platform, clock, store and lock dir
	e := newEnv(t, false, Options{})
	fl, err := e.gate.lock("api")
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Unlock()
	if _, err := e.gate.Publish(context.Background(), req(imgGood)); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "held by publish (pid") {
		t.Fatalf("Publish while locked = %v, want ErrBusy naming the holder", err)
	}
}

package deploy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
)

var services = []string{"api", "orchestrator", "gateway", "publish-worker"}

// testConfig is a fleet's numbers as a real one would set them: a 5 s
// health check passing twice, a 5 s drain serve period, a 2 min drain
// bound and Nomad's 10 s min_healthy_time; the fixture's deploy polls every
// 2 s (lbport.DefaultPollInterval), and the fakes move a step per poll. The
// deploy tests run in synctest bubbles, so these minutes of bubble time take
// milliseconds, and the same steps however loaded the machine is.
func testConfig(mode string) *fleet.Config {
	c := fleet.Default()
	c.LoadBalancer.HealthCheck.Interval = 5 * time.Second
	c.LoadBalancer.HealthCheck.Timeout = 2 * time.Second
	c.LoadBalancer.HealthCheck.HealthyThreshold = 2
	c.Drain.ServePeriod = 5 * time.Second
	c.Drain.ShutdownTimeout = 10 * time.Second
	c.Drain.Max = 2 * time.Minute
	c.Deploy.DrainMode = mode
	c.Deploy.LeaseTTL = 30 * time.Second
	c.Deploy.Verify = services
	c.Deploy.MinHealthyTime = 10 * time.Second
	return &c
}

type fixture struct {
	agents []*fakeAgent
	lb     *fakeLB
	events []Event
	mu     sync.Mutex
}

func newFixture(n int) *fixture {
	f := &fixture{}
	for i := range n {
		f.agents = append(f.agents, newFakeAgent("web-"+string(rune('1'+i)), "v1", services))
	}
	f.lb = newFakeLB(f.agents...)
	return f
}

func (f *fixture) options(cfg *fleet.Config, version string) Options {
	var hosts []Host
	for _, a := range f.agents {
		hosts = append(hosts, Host{Name: a.name, Target: "127.0.0.1:1", Agent: a, Definition: defBytes(version)})
	}
	return Options{
		Config: cfg, Version: version, Hosts: hosts, LB: f.lb, Front: f.lb,
		Verify: cfg.Deploy.Verify, TargetServices: []string{"gateway"}, Poll: lbport.DefaultPollInterval,
		Observer: ObserverFunc(func(e Event) {
			f.mu.Lock()
			f.events = append(f.events, e)
			f.mu.Unlock()
		}),
	}
}

// bubbleRun runs f as the subtest name inside a synctest bubble, where time
// is the bubble's: it advances only when every goroutine of the bubble is
// durably blocked. A deploy against the in-memory fakes then takes the same
// steps however loaded the machine is — a poll cannot land late because the
// scheduler starved it — and a deploy of minutes takes milliseconds. Within
// the bubble t.Run, t.Parallel and t.Deadline must not be called, so a table
// test runs each case through this rather than nesting synctest.Test.
func bubbleRun(t *testing.T, name string, f func(t *testing.T)) bool {
	t.Helper()
	return t.Run(name, func(t *testing.T) { synctest.Test(t, f) })
}

// run deploys with o and returns what Run returned. Call it inside a
// synctest bubble (synctest.Test or bubbleRun), with the fixture made in
// it too: the fakes stamp their starts with time.Now, and the deploy's
// timing (its min_healthy_time window, its drain bound, the hour this
// allows it) is then the bubble's clock, not the machine's.
func run(t *testing.T, o Options) (Result, error) {
	t.Helper()
	d, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	return d.Run(ctx)
}

func TestDeployer_Run_AllHosts(t *testing.T) {
	for _, mode := range []string{fleet.DrainModeDeregister, fleet.DrainModeHealth, fleet.DrainModeBoth} {
		bubbleRun(t, mode, func(t *testing.T) {
			f := newFixture(3)
			res, err := run(t, f.options(testConfig(mode), "v2"))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !res.OK || len(res.Hosts) != 3 {
				t.Fatalf("result = %+v", res)
			}
			for _, a := range f.agents {
				if v, _ := a.snapshot(); v != "v2" {
					t.Errorf("%s runs %q, want v2", a.name, v)
				}
				if a.lease != "" || a.fleet != "" {
					t.Errorf("%s leases left held: host %q fleet %q", a.name, a.lease, a.fleet)
				}
				if string(a.lastGood) != string(defBytes("v2")) {
					t.Errorf("%s last good not marked", a.name)
				}
				if want := []string{"publish", "drain", "stop", "start"}; mode != fleet.DrainModeDeregister && !slices.Equal(a.log, want) {
					t.Errorf("%s did %v, want %v", a.name, a.log, want)
				}
				if slices.Contains(a.log, "STOPPED WHILE IN ROTATION") {
					t.Errorf("%s was stopped while the LB still routed to it", a.name)
				}
			}
			for _, h := range res.Hosts {
				var got []Phase
				for _, p := range h.Phases {
					got = append(got, p.Phase)
				}
				want := []Phase{PhaseLease, PhasePublish, PhaseDrain, PhaseStop, PhaseStart, PhaseHealthy, PhaseVerify, PhaseRelease}
				if !slices.Equal(got, want) {
					t.Errorf("%s phases %v, want %v", h.Host, got, want)
				}
			}
			// Last good is recorded only after the whole fleet passed the
			// sweep.
			sweep := slices.IndexFunc(f.events, func(e Event) bool { return e.Phase == PhaseSweep && e.Kind == EventEnd })
			firstRelease := slices.IndexFunc(f.events, func(e Event) bool { return e.Phase == PhaseRelease })
			if sweep < 0 || firstRelease < sweep {
				t.Errorf("sweep end at event %d, first release at %d: want every release after the sweep", sweep, firstRelease)
			}
		})
	}
}

// mostAtOnce observes o's deploy and reports, once it ran, the most hosts
// deployed at once: from their lease to the end of their verify.
func mostAtOnce(o *Options) func() int {
	var mu sync.Mutex
	active := map[string]bool{}
	most := 0
	o.Observer = ObserverFunc(func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case e.Phase == PhaseLease && e.Kind == EventBegin:
			active[e.Host] = true
		case e.Phase == PhaseVerify && e.Kind == EventEnd:
			delete(active, e.Host)
		}
		most = max(most, len(active))
	})
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return most
	}
}

func TestDeployer_Run_OneHostAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(3)
		o := f.options(testConfig(fleet.DrainModeBoth), "v2")
		most := mostAtOnce(&o)
		if _, err := run(t, o); err != nil {
			t.Fatal(err)
		}
		if n := most(); n != 1 {
			t.Errorf("%d hosts deployed at once, want 1 (batch_size 1)", n)
		}

		f = newFixture(4)
		cfg := testConfig(fleet.DrainModeBoth)
		cfg.Deploy.BatchSize = 2
		o = f.options(cfg, "v2")
		most = mostAtOnce(&o)
		if _, err := run(t, o); err != nil {
			t.Fatal(err)
		}
		if n := most(); n > 2 {
			t.Errorf("%d hosts at once, want at most 2", n)
		}
	})
}

func TestDeployer_Run_Failures(t *testing.T) {
	cases := []struct {
		name       string
		setup      func(f *fixture, o *Options)
		wantPhase  Phase
		wantMsg    string
		rolledBack bool
	}{
		{
			name:      "new version never starts",
			setup:     func(f *fixture, _ *Options) { f.agents[1].failStartFor = "v2" },
			wantPhase: PhaseStart, wantMsg: "exited with code 1", rolledBack: true,
		},
		{
			name:      "new version starts but never healthy",
			setup:     func(f *fixture, _ *Options) { f.agents[1].unhealthyFor = "v2" },
			wantPhase: PhaseHealthy, wantMsg: "did not report web-2 healthy", rolledBack: true,
		},
		{
			name:      "LB never drains in-flight requests",
			setup:     func(f *fixture, _ *Options) { f.lb.stuckInFlight = "web-2" },
			wantPhase: PhaseDrain, wantMsg: "out of rotation", rolledBack: true,
		},
		{
			name: "host lease lost mid-deploy",
			setup: func(f *fixture, o *Options) {
				f.agents[1].loseLeaseOnce = true
				o.Config.Drain.Max = time.Hour
				f.lb.stuckInFlight = "web-2"
			},
			wantPhase: PhaseDrain, wantMsg: "lease lost",
		},
	}
	for _, tc := range cases {
		bubbleRun(t, tc.name, func(t *testing.T) {
			f := newFixture(3)
			o := f.options(testConfig(fleet.DrainModeBoth), "v2")
			tc.setup(f, &o)
			res, err := run(t, o)
			var se *StepError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *StepError", err)
			}
			if se.Host != "web-2" || se.Phase != tc.wantPhase || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %v; want host web-2 phase %s containing %q", err, tc.wantPhase, tc.wantMsg)
			}
			if se.RolledBack != tc.rolledBack {
				t.Errorf("rolled back = %v (%v), want %v", se.RolledBack, se.RollbackErr, tc.rolledBack)
			}
			if res.OK || len(res.Hosts) != 2 {
				t.Errorf("result ok=%v hosts=%d; want failure after 2 hosts", res.OK, len(res.Hosts))
			}
			// web-1 was deployed before web-2 failed: the fleet rollback
			// returns it, unless the deploy lost its lease (then the
			// agent's recovery owns it, which the fake does not run).
			want1 := "v1"
			if !tc.rolledBack {
				want1 = "v2"
			}
			if v, _ := f.agents[0].snapshot(); v != want1 {
				t.Errorf("web-1 runs %q, want %s", v, want1)
			}
			if tc.rolledBack && !errors.Is(err, ErrFleetRolledBack) {
				t.Errorf("err = %v, want it to say the fleet was rolled back", err)
			}
			if tc.rolledBack {
				if v, h := f.agents[1].snapshot(); v != "v1" || !h {
					t.Errorf("web-2 runs %q healthy=%v, want v1 healthy after rollback", v, h)
				}
				if got, want := string(f.agents[1].current), string(defBytes("v1")); got != want {
					t.Errorf("web-2 current definition %s, want the previous one restored byte for byte %s", got, want)
				}
			}
			if len(f.agents[2].log) != 0 {
				t.Errorf("web-3 was touched after web-2 failed: %v", f.agents[2].log)
			}
			for _, a := range f.agents {
				if a.fleet != "" {
					t.Errorf("%s fleet lease left held", a.name)
				}
			}
		})
	}
}

func TestDeployer_Run_RefusedBeforeTouchingAnything(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(f *fixture)
		wantErr error
	}{
		{"agent unreachable", func(f *fixture) { f.agents[2].unreachable = true }, ErrPreflight},
		{"another deploy holds the fleet lease", func(f *fixture) { f.agents[1].fleet = "other deploy" }, ErrInProgress},
	}
	for _, tc := range cases {
		bubbleRun(t, tc.name, func(t *testing.T) {
			f := newFixture(3)
			tc.setup(f)
			_, err := run(t, f.options(testConfig(fleet.DrainModeBoth), "v2"))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			for _, a := range f.agents {
				if len(a.log) != 0 {
					t.Errorf("%s was touched: %v", a.name, a.log)
				}
				if v, _ := a.snapshot(); v != "v1" {
					t.Errorf("%s runs %q", a.name, v)
				}
			}
			if tc.wantErr == ErrInProgress && f.agents[0].fleet != "" {
				t.Errorf("fleet lease taken on web-1 was not given back")
			}
		})
	}
}

func TestDeployer_Run_FirstRolloutHasNothingToDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(2)
		for _, a := range f.agents {
			a.running, a.current, a.lastGood = "", nil, nil
		}
		// Fail-open keeps the empty targets in rotation; waiting on them would
		// never end.
		f.lb.stuckInFlight = "web-1"
		res, err := run(t, f.options(testConfig(fleet.DrainModeHealth), "v1"))
		if err != nil {
			t.Fatalf("first rollout: %v", err)
		}
		for _, h := range res.Hosts {
			if !h.OK {
				t.Errorf("%s: %+v", h.Host, h)
			}
		}
		if v, _ := f.agents[0].snapshot(); v != "v1" {
			t.Errorf("web-1 runs %q", v)
		}
	})
}

func TestDeployer_Run_FailedFirstRolloutStopsTheNewServices(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(1)
		a := f.agents[0]
		a.running, a.current, a.lastGood = "", nil, nil
		a.unhealthyFor = "v1"
		o := f.options(testConfig(fleet.DrainModeBoth), "v1")
		o.AllowDowntime = true // one host
		_, err := run(t, o)
		var se *StepError
		if !errors.As(err, &se) || !se.RolledBack {
			t.Fatalf("err = %v, want a rolled-back step error", err)
		}
		if v, _ := a.snapshot(); v != "" {
			t.Errorf("web-1 still runs %q; a failed first rollout must stop what it started", v)
		}
		if slices.Contains(a.log, "rollback") {
			t.Error("asked the agent to restore a previous definition that does not exist")
		}
	})
}

func TestDeployer_Run_ReportsKilledServices(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(1)
		f.agents[0].killOnStop = true
		o := f.options(testConfig(fleet.DrainModeBoth), "v2")
		o.AllowDowntime = true // one host
		res, err := run(t, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Hosts[0].Killed, []string{"gateway"}) {
			t.Errorf("killed = %v, want [gateway]", res.Hosts[0].Killed)
		}
		found := false
		for _, e := range f.events {
			if e.Kind == EventNote && strings.Contains(e.Detail, "ignored SIGTERM") {
				found = true
			}
		}
		if !found {
			t.Error("no event reported the killed service")
		}
	})
}

func TestNew_Preflight(t *testing.T) {
	cases := []struct {
		name string
		mod  func(o *Options)
		want string
	}{
		{"no version", func(o *Options) { o.Version = "" }, "--version"},
		{"no hosts", func(o *Options) { o.Hosts = nil }, "no hosts"},
		{"host without agent", func(o *Options) { o.Hosts[0].Agent = nil }, "hosts[].agent"},
		{"no definition", func(o *Options) { o.Hosts[0].Definition = nil }, "no definition"},
		{"batch takes every host", func(o *Options) { o.Config.Deploy.BatchSize = 2 }, "--allow-downtime"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(2)
			o := f.options(testConfig(fleet.DrainModeBoth), "v2")
			tc.mod(&o)
			_, err := New(o)
			if !errors.Is(err, ErrPreflight) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want ErrPreflight mentioning %q", err, tc.want)
			}
		})
	}
}

// TestDeployer_CommitBeforeMarkGood: the deploy records the commit on every
// host before it marks the first one good, and only once the whole fleet
// passed the sweep: a deploy that rolls back commits nowhere.
func TestDeployer_CommitBeforeMarkGood(t *testing.T) {
	cases := map[string]struct {
		failStartOn string // host whose start of v2 fails; "" for none
		wantOK      bool
	}{
		"fleet verified": {wantOK: true},
		"web-2 fails":    {failStartOn: "web-2"},
	}
	for name, tc := range cases {
		bubbleRun(t, name, func(t *testing.T) {
			f := newFixture(3)
			var atFirstMarkGood []string
			for _, a := range f.agents {
				if a.name == tc.failStartOn {
					a.failStartFor = "v2"
				}
				a.beforeMarkGood = func() {
					if atFirstMarkGood != nil {
						return
					}
					atFirstMarkGood = []string{}
					for _, b := range f.agents {
						b.mu.Lock()
						atFirstMarkGood = append(atFirstMarkGood, b.committed)
						b.mu.Unlock()
					}
				}
			}
			res, err := run(t, f.options(testConfig(fleet.DrainModeBoth), "v2"))
			if (err == nil) != tc.wantOK || res.OK != tc.wantOK {
				t.Fatalf("Run: ok %v, err %v; want ok %v", res.OK, err, tc.wantOK)
			}
			for _, a := range f.agents {
				want := ""
				if tc.wantOK {
					want = "v2"
				}
				if a.committed != want {
					t.Errorf("%s committed %q, want %q", a.name, a.committed, want)
				}
			}
			if tc.wantOK && !slices.Equal(atFirstMarkGood, []string{"v2", "v2", "v2"}) {
				t.Errorf("when the first host was marked good, the hosts had committed %q; want every host on v2", atFirstMarkGood)
			}
		})
	}
}

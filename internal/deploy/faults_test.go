package deploy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
)

func TestChanges(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	up := instance{ID: "gw-1", Running: true, Started: t0}
	cases := []struct {
		name          string
		before, after instance
		want          string // "" when it stayed up
	}{
		{"same instance, still up", up, up, ""},
		{"exited", up, instance{ID: "gw-1", Started: t0, Finished: t0.Add(5 * time.Second)}, "exited"},
		{"stopped without a new exit time", up, instance{ID: "gw-1", Started: t0}, "not running"},
		{"restarted by someone (same instance, later start)", up, instance{ID: "gw-1", Running: true, Started: t0.Add(time.Second), Finished: t0.Add(900 * time.Millisecond)}, "restarted"},
		{"replaced by another instance", up, instance{ID: "gw-2", Running: true, Started: t0.Add(time.Second)}, "replaced"},
		{"vanished", up, instance{}, "no instance"},
		{"was not running at the first look", instance{ID: "gw-1", Started: t0}, instance{ID: "gw-1", Running: true, Started: t0}, "was not running"},
		// An earlier exit (before the first look) is no change: only a
		// later timestamp is.
		{"old exit, same run", instance{ID: "gw-1", Running: true, Started: t0, Finished: t0.Add(-time.Minute)}, instance{ID: "gw-1", Running: true, Started: t0, Finished: t0.Add(-time.Minute)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := changes(look{"gateway": tc.before}, look{"gateway": tc.after})
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("changes = %v, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("changes = %v, want one containing %q", got, tc.want)
			}
		})
	}
}

func TestTakeLook_PrefersTheRunningInstance(t *testing.T) {
	t0 := time.Now()
	t1 := t0.Add(time.Second)
	st := agentapi.Status{Services: []agentapi.ServiceStatus{
		{Name: "gateway", ID: "gw-old", StartedAt: &t1, FinishedAt: &t1},
		{Name: "gateway", ID: "gw-new", Running: true, StartedAt: &t0},
		{Name: "api", ID: "api-1", Running: true, StartedAt: &t0},
	}}
	lk := takeLook(st, []string{"gateway", "worker"})
	if lk["gateway"].ID != "gw-new" {
		t.Errorf("gateway look = %+v, want the running instance", lk["gateway"])
	}
	if _, ok := lk["api"]; ok {
		t.Error("api is not in the verify list but was looked at")
	}
	if in, ok := lk["worker"]; !ok || in.Running {
		t.Errorf("worker (no instance) = %+v, %v; want an empty, not running entry", in, ok)
	}
}

func TestDecideCapacity(t *testing.T) {
	healthy := lbport.Target{State: lbport.StateHealthy, InRotation: true}
	gone := lbport.Target{State: lbport.StateUnused}
	unhealthy := lbport.Target{State: lbport.StateUnhealthy, Reason: lbport.ReasonFailedHealthChecks}
	cases := []struct {
		name     string
		reads    []targetRead
		batch    []string
		required int
		ok       bool
		out      string
	}{
		{"two serve outside the batch", []targetRead{{"web-1", healthy, nil}, {"web-2", healthy, nil}, {"web-3", healthy, nil}}, []string{"web-1"}, 1, true, ""},
		{"the issue's degraded fleet", []targetRead{{"web-1", healthy, nil}, {"web-2", gone, nil}, {"web-3", gone, nil}}, []string{"web-1"}, 1, false, "web-2 (deregistered"},
		{"unhealthy does not count", []targetRead{{"web-1", healthy, nil}, {"web-2", unhealthy, nil}}, []string{"web-1"}, 1, false, "web-2 (unhealthy"},
		{"unknown does not count", []targetRead{{"web-1", healthy, nil}, {"web-2", healthy, errors.New("refused")}}, []string{"web-1"}, 1, false, "refused"},
		{"50% of 4 needs 2", []targetRead{{"web-1", healthy, nil}, {"web-2", healthy, nil}, {"web-3", gone, nil}, {"web-4", healthy, nil}}, []string{"web-1"}, 2, true, "web-3"},
		{"a batch out of service takes nothing out", []targetRead{{"web-1", gone, nil}, {"web-2", gone, nil}}, []string{"web-1"}, 1, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := decideCapacity(tc.reads, tc.batch, tc.required)
			if v.OK != tc.ok {
				t.Errorf("ok = %v, want %v (%s)", v.OK, tc.ok, v)
			}
			if tc.out != "" && !strings.Contains(v.String(), tc.out) {
				t.Errorf("verdict %q does not name %q", v, tc.out)
			}
		})
	}
}

func TestInService_OneArithmeticForCheckAndDeploy(t *testing.T) {
	cases := []struct {
		value string
		hosts int
		want  int
		bad   bool
	}{
		{"", 3, 1, false},
		{"1", 3, 1, false},
		{"2", 3, 2, false},
		{"50%", 4, 2, false},
		{"50%", 3, 2, false}, // rounded up, as ECS
		{"1%", 3, 1, false},
		{"0", 3, 0, true},
		{"150%", 3, 0, true},
		{"half", 3, 0, true},
	}
	for _, tc := range cases {
		got, err := fleet.Deploy{MinInService: tc.value}.InService(tc.hosts)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("InService(%q, %d hosts) = %d, %v; want %d, bad=%v", tc.value, tc.hosts, got, err, tc.want, tc.bad)
		}
	}
}

func hasChange(f *fixture, change string) bool {
	f.lb.mu.Lock()
	defer f.lb.mu.Unlock()
	return slices.Contains(f.lb.changes, change)
}

// The late crash: web-1's new gateway passes its checks, then exits
// inside min_healthy_time. Look twice catches it on web-1, which is rolled
// back; the release never reaches web-2.
func TestDeployer_Run_LateCrashNeverReachesASecondHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(3)
		cfg := testConfig(fleet.DrainModeBoth)
		cfg.Deploy.MinHealthyTime = 30 * time.Second
		for _, a := range f.agents {
			a.crashFor, a.crashAfter = "v2", 3
		}
		_, err := run(t, f.options(cfg, "v2"))
		var se *StepError
		if !errors.As(err, &se) || se.Host != "web-1" || se.Phase != PhaseVerify || !se.RolledBack {
			t.Fatalf("err = %v; want web-1 failed at verify and rolled back", err)
		}
		if !strings.Contains(err.Error(), "gateway: exited") {
			t.Errorf("err = %v, want it to name the gateway's exit", err)
		}
		for _, a := range f.agents {
			if v, h := a.snapshot(); v != "v1" || !h {
				t.Errorf("%s runs %q healthy=%v, want v1", a.name, v, h)
			}
			if string(a.lastGood) != string(defBytes("v1")) {
				t.Errorf("%s last good is not v1", a.name)
			}
		}
		if len(f.agents[1].log) != 0 || len(f.agents[2].log) != 0 {
			t.Errorf("the release reached another host: web-2 %v, web-3 %v", f.agents[1].log, f.agents[2].log)
		}
	})
}

// A crash on web-2 after web-1 moved: web-2 is restored and web-1 rolled
// back with the fleet; nothing is marked good on the new version.
func TestDeployer_Run_FleetRollback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(3)
		cfg := testConfig(fleet.DrainModeBoth)
		cfg.Deploy.MinHealthyTime = 30 * time.Second
		f.agents[1].crashFor, f.agents[1].crashAfter = "v2", 3
		res, err := run(t, f.options(cfg, "v2"))
		if !errors.Is(err, ErrFleetRolledBack) {
			t.Fatalf("err = %v, want the fleet rolled back", err)
		}
		if !slices.Equal(res.RolledBack, []string{"web-1"}) {
			t.Errorf("fleet rollback = %v, want [web-1]", res.RolledBack)
		}
		for _, a := range f.agents {
			if v, h := a.snapshot(); v != "v1" || !h {
				t.Errorf("%s runs %q healthy=%v, want v1", a.name, v, h)
			}
			if string(a.lastGood) == string(defBytes("v2")) {
				t.Errorf("%s recorded v2 as last good", a.name)
			}
			if a.lease != "" || a.fleet != "" {
				t.Errorf("%s leases left held", a.name)
			}
		}
		if !slices.Contains(f.agents[0].log, "rollback") {
			t.Errorf("web-1 did %v, want a rollback", f.agents[0].log)
		}
		if len(f.agents[2].log) != 0 {
			t.Errorf("web-3 was touched: %v", f.agents[2].log)
		}
	})
}

// web-1 passes its look twice and crashes afterwards: the recheck before
// web-2 catches it, and web-2 is never drained.
func TestDeployer_Run_RecheckBeforeTheNextBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(2)
		cfg := testConfig(fleet.DrainModeBoth)
		cfg.Deploy.MinHealthyTime = 20 * time.Second
		f.agents[0].crashFor, f.agents[0].crashAfter = "v2", 1_000_000
		o := f.options(cfg, "v2")
		o.Observer = ObserverFunc(func(e Event) {
			if e.Host == "web-1" && e.Phase == PhaseVerify && e.Kind == EventEnd {
				a := f.agents[0]
				a.mu.Lock()
				a.crashAfter = 0
				a.mu.Unlock()
			}
		})
		_, err := run(t, o)
		if !errors.Is(err, ErrRecheck) || !errors.Is(err, ErrFleetRolledBack) {
			t.Fatalf("err = %v, want a failed recheck and a fleet rollback", err)
		}
		if len(f.agents[1].log) != 0 {
			t.Errorf("web-2 was touched after web-1 failed: %v", f.agents[1].log)
		}
		if v, _ := f.agents[0].snapshot(); v != "v1" {
			t.Errorf("web-1 runs %q, want v1", v)
		}
	})
}

// The degraded fleet: web-2 and web-3 deregistered by hand; the
// deploy refuses to drain web-1, the only target in rotation, and names the
// hosts that are out.
func TestDeployer_Run_DegradedFleetIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(3)
		for _, id := range []string{"web-2", "web-3"} {
			f.lb.targets[id].registered, f.lb.targets[id].inFlight = false, 0
		}
		_, err := run(t, f.options(testConfig(fleet.DrainModeBoth), "v2"))
		if !errors.Is(err, ErrCapacity) {
			t.Fatalf("err = %v, want ErrCapacity", err)
		}
		for _, want := range []string{"web-2", "web-3", "nothing was changed"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v; want it to say %q", err, want)
			}
		}
		for _, a := range f.agents {
			if len(a.log) != 0 {
				t.Errorf("%s was touched: %v", a.name, a.log)
			}
		}
		if len(f.lb.changes) != 0 {
			t.Errorf("the LB was changed: %v", f.lb.changes)
		}
		var progress int
		for _, e := range f.events {
			if e.Kind == EventProgress && strings.Contains(e.Detail, "web-2") {
				progress++
			}
		}
		if progress == 0 {
			t.Error("the capacity wait printed no progress naming the hosts that are out")
		}
	})
}

// One refused connection to the LB never fails a deploy.
func TestDeployer_Run_RetriesARefusedLB(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(2)
		f.lb.refuse = 3
		o := f.options(testConfig(fleet.DrainModeBoth), "v2")
		if _, err := run(t, o); err != nil {
			t.Fatalf("Run: %v", err)
		}
		retried := slices.ContainsFunc(f.events, func(e Event) bool {
			return e.Kind == EventProgress && strings.Contains(e.Detail, "connection refused")
		})
		if !retried {
			t.Error("no progress line said a call was retried")
		}
	})
}

// A lease the agent no longer holds is lost for good; one this deployer
// could not renew for its TTL (the agent unreachable, the deployer frozen)
// is lost by the deployer's own clock, without the agent's word.
func TestLease_Confirm(t *testing.T) {
	clock := clockwork.NewFakeClock()
	a := newFakeAgent("web-1", "v1", services)
	l0, err := a.AcquireLease(context.Background(), false, "test", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l := newLease(a, false, "web-1", l0, time.Second, clock.Now(), clock)
	if err := l.confirm(context.Background()); err != nil {
		t.Fatalf("confirm a live lease: %v", err)
	}
	a.mu.Lock()
	a.unreachable = true
	a.mu.Unlock()
	if err := l.confirm(context.Background()); err == nil || errors.Is(err, ErrLeaseLost) {
		t.Fatalf("confirm with the agent unreachable, inside the TTL = %v; want a transient error", err)
	}
	clock.Advance(1500 * time.Millisecond) // past the TTL, still unrenewed
	err = l.confirm(context.Background())
	if !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "deployer's clock") {
		t.Fatalf("confirm after the TTL = %v, want ErrLeaseLost by the deployer's clock", err)
	}
	a.mu.Lock()
	a.unreachable = false
	a.mu.Unlock()
	if err := l.confirm(context.Background()); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("confirm once the agent answers again = %v, want still lost", err)
	}

	// The agent dropped it (it expired there, its recovery ran).
	l1, err := a.AcquireLease(context.Background(), true, "test", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fl := newLease(a, true, "web-1", l1, time.Second, clock.Now(), clock)
	if err := a.ReleaseLease(context.Background(), true, l1.ID); err != nil {
		t.Fatal(err)
	}
	if err := fl.confirm(context.Background()); !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "no longer holds") {
		t.Errorf("confirm of a lease the agent dropped = %v, want ErrLeaseLost", err)
	}
}

// A deploy whose host lease is gone changes nothing at the LB for it.
func TestDeployer_LBChangesAreFencedByTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(2)
		f.agents[0].loseLeaseOnce = true
		o := f.options(testConfig(fleet.DrainModeBoth), "v2")
		_, err := run(t, o)
		if !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("err = %v, want ErrLeaseLost", err)
		}
		if hasChange(f, "deregister web-1") || hasChange(f, "register web-1") {
			t.Errorf("the LB was changed for web-1 without a live lease: %v", f.lb.changes)
		}
		if strings.Contains(err.Error(), "ROLLBACK FAILED") {
			t.Errorf("err = %v: a host whose lease is gone is the agent's to restore, not a failed rollback", err)
		}
	})
}

// A target the LB stops calling healthy for a moment (a slow check on a busy
// host) restarts the look, as Nomad's min_healthy_time within its
// healthy_deadline; the host is verified once it stays healthy a whole
// window.
func TestDeployer_Run_LookRestartsOnAFlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(2)
		cfg := testConfig(fleet.DrainModeBoth)
		cfg.Deploy.MinHealthyTime = 20 * time.Second
		o := f.options(cfg, "v2")
		flapped := false
		o.Observer = ObserverFunc(func(e Event) {
			f.mu.Lock()
			f.events = append(f.events, e)
			f.mu.Unlock()
			if e.Host == "web-1" && e.Phase == PhaseVerify && e.Kind == EventBegin && !flapped {
				flapped = true
				f.lb.mu.Lock()
				f.lb.targets["web-1"].state, f.lb.targets["web-1"].polls = "unhealthy", 0
				f.lb.mu.Unlock()
			}
		})
		if _, err := run(t, o); err != nil {
			t.Fatalf("Run: %v", err)
		}
		restarted := slices.ContainsFunc(f.events, func(e Event) bool {
			return e.Host == "web-1" && e.Kind == EventProgress && strings.Contains(e.Detail, "starts again")
		})
		if !restarted {
			t.Error("no progress line said the look started again")
		}
	})
}

// slowRenewals is an agent whose lease renewals answer late: each advances
// the clock by delay before the agent's answer comes back.
type slowRenewals struct {
	*fakeAgent
	clock *clockwork.FakeClock
	delay time.Duration
}

func (a *slowRenewals) RenewLease(ctx context.Context, fleet bool, id string, ttl time.Duration) (agentapi.Lease, error) {
	a.clock.Advance(a.delay)
	return a.fakeAgent.RenewLease(ctx, fleet, id, ttl)
}

// A renewal the agent granted but whose answer came back after the TTL (the
// deployer or the agent starved of CPU) confirms nothing — nothing may be
// fenced by it — and loses nothing: the next renewal asks the agent again,
// and the lease is lost only if the agent no longer holds it.
func TestLease_ConfirmAnsweredLate(t *testing.T) {
	clock := clockwork.NewFakeClock()
	a := &slowRenewals{fakeAgent: newFakeAgent("web-1", "v1", services), clock: clock}
	l0, err := a.AcquireLease(context.Background(), false, "test", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l := newLease(a, false, "web-1", l0, time.Second, clock.Now(), clock)

	a.delay = 1500 * time.Millisecond
	err = l.confirm(context.Background())
	if err == nil || errors.Is(err, ErrLeaseLost) || !transient(err) || !strings.Contains(err.Error(), "longer than its TTL") {
		t.Fatalf("confirm answered after the TTL = %v; want a transient error saying the answer came too late", err)
	}
	a.delay = 10 * time.Millisecond
	if err := l.confirm(context.Background()); err != nil {
		t.Fatalf("confirm answered in time after a late one = %v; want the lease confirmed (the agent still holds it)", err)
	}

	// Late again, and meanwhile the agent let it go (its expiry came).
	a.delay = 1500 * time.Millisecond
	if err := l.confirm(context.Background()); err == nil || errors.Is(err, ErrLeaseLost) {
		t.Fatalf("second late answer = %v; want a transient error", err)
	}
	a.mu.Lock()
	a.lease = ""
	a.mu.Unlock()
	a.delay = 10 * time.Millisecond
	if err := l.confirm(context.Background()); !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "no longer holds") {
		t.Fatalf("confirm after the agent dropped the lease = %v; want ErrLeaseLost", err)
	}
}

package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/demo"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/testbin"
)

// TestDemo_Faults runs every fault of `mythex demo --fault` end to end, at
// the test scale under load from the prober, and asserts the fleet's final
// state — every host on one verified version, its last known good, healthy
// and in rotation — and the requests that reached nothing against the
// fault's bound.
func TestDemo_Faults(t *testing.T) {
	t.Parallel() // its own fleet: processes, ports and directories
	bin := mythexBin(t)
	cases := []struct {
		fault string
		// want is the version the fleet must end on; "" is either, as long
		// as it is one.
		want string
		// reached is the hosts the new version may have been started on.
		reached []string
		// hosts is the fleet's size; default 2.
		hosts int
	}{
		// The case: a release whose gateway exits after it served
		// never reaches a second host.
		{"late-crash", "v1", []string{"web-1"}, 0},
		// web-2 deregistered by an operator: web-1 is never drained.
		{"degraded-fleet", "v1", nil, 0},
		// The deployer dies mid-deploy: the agents' lease-expiry recovery
		// returns every host to v1 and into rotation.
		// Three hosts: the two the dead deploy touched recover on their
		// own, and a recovery takes a serving host out only with
		// deploy.min_in_service of the others in service: web-3 serves
		// meanwhile.
		{"deployer-kill", "v1", []string{"web-1", "web-2"}, 3},
		// The LB restarts while web-2 drains: the deploy completes.
		{"lb-restart", "v2", []string{"web-1", "web-2"}, 0},
		// web-1's agent dies as web-1 stops and comes back a lease TTL
		// later: whether the deploy carries on or rolls back, one version
		// everywhere. (Every phase: TestAgentKilledInEachPhase.)
		{"agent-kill", "", []string{"web-1", "web-2"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.fault, func(t *testing.T) {
			// How many fleets run at once is bounded suite-wide
			// (testbin.FleetSlot): every wait has room on a loaded machine.
			t.Parallel()
			testbin.FleetSlot(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			sum, err := demo.Run(ctx, demo.Options{Profile: demo.ProfileAfter, TimeScale: testScale, Hosts: max(tc.hosts, 2), Rate: 100, Exe: bin, AppExe: appBin(t), Dir: t.TempDir(), ProbeTimeout: testProbeTimeout,
				Fault: tc.fault,
				Adjust: func(c *fleet.Config) {
					c.LoadBalancer.HealthCheck.Timeout = testCheckTimeout
					// A race-enabled LB on a loaded machine checks late: a
					// wider drain keeps the overlap (serve period > the LB's
					// detection) true for recoveries that flip health
					// without a deregistration (deployer-kill).
					c.Drain.ServePeriod = 2500 * time.Millisecond
					c.Backend.StopGracePeriod = 4 * time.Second
				}})
			if err != nil {
				t.Fatal(err)
			}
			fr := sum.FaultReport
			if fr == nil || fr.Fault != tc.fault {
				t.Fatalf("fault report = %+v", fr)
			}
			if fr.FleetVersionAfter == "" || (tc.want != "" && fr.FleetVersionAfter != tc.want) {
				t.Errorf("fleet after = %q (%s), want every host on %s", fr.FleetVersionAfter, fr.Unsettled, tc.want)
			}
			if fr.ReachedNothing > fr.ReachedNothingBound {
				t.Errorf("%d requests reached nothing, bound %d (probe %+v)", fr.ReachedNothing, fr.ReachedNothingBound, sum.Deploys[0].Probe)
			}
			// The deployer-kill release may be killed before web-2 starts.
			for _, h := range fr.HostsReached {
				if !slices.Contains(tc.reached, h) {
					t.Errorf("the new version reached %v, want at most %v", fr.HostsReached, tc.reached)
				}
			}
			if tc.fault == "late-crash" && !fr.RolledBack {
				t.Error("late-crash: not reported rolled back")
			}
			if sum.Deploys[0].Probe.Requests < 100 {
				t.Errorf("only %d requests were sent", sum.Deploys[0].Probe.Requests)
			}
			if !sum.OK() {
				t.Errorf("summary not OK: %+v", fr)
			}
		})
	}
}

// The faults that involve the load balancer (issue 11's matrix), behind a
// real HAProxy, one after the other on one fleet: lb-restart (HAProxy
// soft-reloaded as web-2 begins to drain, which loses its drain: set again
// at the deploy's next poll if the drain wait is still on, else web-2's
// failing health check takes it out; the deploy completes) and
// degraded-fleet (web-2 set to drain by an operator: the deploy is
// refused, nothing changes). Each reports the same
// fields as behind the embedded LB, and no more requests reach nothing than
// the fault's bound.
func TestDemo_FaultsBehindHAProxy(t *testing.T) {
	needHAProxy(t)
	t.Parallel()
	testbin.FleetSlotFirst(t) // 20 s or more: among the longest fleets
	bin := mythexBin(t)
	cfg, err := demo.ProfileConfig(demo.ProfileAfter, testScale)
	if err != nil {
		t.Fatal(err)
	}
	cfg.LoadBalancer.HealthCheck.Timeout = testCheckTimeout
	cfg.Drain.ServePeriod = 2500 * time.Millisecond
	cfg.Backend.StopGracePeriod = 4 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f := launchFleet(ctx, t, demo.FleetOptions{Config: cfg, Hosts: 2, Dir: t.TempDir(), LB: demo.LBHAProxy})
	// lb-restart first: the fleet restarts its load balancer once, and every
	// fault's judge waits for that restart (sync.Once) before it reads.
	cases := []struct {
		fault, from, to, want string
		reached               []string
	}{
		{"lb-restart", "v1", "v2", "v2", []string{"web-1", "web-2"}},
		{"degraded-fleet", "v2", "v3", "v2", nil},
	}
	for _, tc := range cases {
		t.Run(tc.fault, func(t *testing.T) {
			begin := time.Now()
			fault := demo.Faults[tc.fault]
			rep, err := demo.DeployUnderLoad(ctx, f, demo.Options{Rate: 100, Exe: bin, ProbeTimeout: testProbeTimeout}, tc.from, tc.to, &fault)
			if err != nil {
				t.Fatal(err)
			}
			fr := rep.Fault
			t.Logf("%s behind HAProxy in %.1fs (drains lost and set again so far: %d): %+v", tc.fault, time.Since(begin).Seconds(), f.DrainsReapplied.Load(), fr)
			if fr == nil || fr.Fault != tc.fault {
				t.Fatalf("fault report = %+v", fr)
			}
			if fr.FleetVersionAfter != tc.want || fr.WantVersion != tc.want {
				t.Errorf("fleet after = %q (%s), want every host on %s", fr.FleetVersionAfter, fr.Unsettled, tc.want)
			}
			if fr.ReachedNothing > fr.ReachedNothingBound {
				t.Errorf("%d requests reached nothing, bound %d (probe %+v)", fr.ReachedNothing, fr.ReachedNothingBound, rep.Probe)
			}
			if !slices.Equal(fr.HostsReached, tc.reached) {
				t.Errorf("the new version reached %v, want %v", fr.HostsReached, tc.reached)
			}
			if fr.RolledBack {
				t.Error("reported rolled back")
			}
			if rep.OK != demo.Faults[tc.fault].DeployOK {
				t.Errorf("deploy ok = %v (%s), want %v", rep.OK, rep.Error, demo.Faults[tc.fault].DeployOK)
			}
			if rep.Probe.Requests < 100 {
				t.Errorf("only %d requests were sent", rep.Probe.Requests)
			}
		})
	}
	if f.RestartTook == 0 || f.RestartErr != nil {
		t.Errorf("lb-restart: HAProxy reloaded in %v, err %v; want one reload", f.RestartTook, f.RestartErr)
	}
}

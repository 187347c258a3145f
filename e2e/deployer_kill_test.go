package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/demo"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/probe"
	"github.com/mythex/mythex/internal/testbin"
)

// faultFleet starts a scaled fleet of hosts hosts (the agent-kill test's
// timings) and rolls v1 onto it.
func faultFleet(t *testing.T, ctx context.Context, bin string, hosts int) *demo.Fleet {
	t.Helper()
	cfg, err := demo.ProfileConfig(demo.ProfileAfter, agentKillScale)
	if err != nil {
		t.Fatal(err)
	}
	// 0.2s scaled is too short a check timeout on a loaded 2-core machine;
	// 0.4s keeps every timing relation (drain 1.5s > 2 × 0.5s + 0.4s).
	cfg.LoadBalancer.HealthCheck.Timeout = 400 * time.Millisecond
	f, err := demo.StartFleet(ctx, demo.FleetOptions{Config: cfg, Hosts: hosts, Exe: bin, AppExe: appBin(t), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Logf("close fleet: %v", err)
		}
	})
	if _, err := f.FirstRollout(ctx, "v1"); err != nil {
		t.Fatalf("first rollout: %v\n%s", err, f.LogTail("web-1", 3000))
	}
	return f
}

// load puts the fleet under load from the prober.
func load(t *testing.T, f *demo.Fleet) *probe.Prober {
	t.Helper()
	p, err := probe.New(probe.Config{URL: f.URL(), Rate: 100, Timeout: testProbeTimeout}, probe.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p
}

// settleAndCount waits until every host is whole (on one version with
// oneVersion), lets the load run as long as the LB needs to notice a target
// gone, and returns the version(s) and the prober's report; no request may
// have reached nothing.
func settleAndCount(t *testing.T, f *demo.Fleet, p *probe.Prober, what string, oneVersion bool) string {
	t.Helper()
	version := waitHostsWhole(t, f, f.Loaded.Deploy.LeaseTTL+time.Minute, oneVersion)
	hc := f.Loaded.LoadBalancer.HealthCheck
	// A tail as long as the LB needs to notice a target gone (a wait for
	// what did not happen: nothing to wait on).
	time.Sleep(hc.Interval*time.Duration(hc.UnhealthyThreshold) + hc.Timeout)
	rep := p.Stop()
	t.Logf("%s: fleet ends on %s; requests %d, reached nothing %d %v", what, version, rep.Requests, rep.ReachedNothing, rep.Reasons)
	if rep.Requests < 100 {
		t.Errorf("only %d requests sent", rep.Requests)
	}
	if rep.ReachedNothing != 0 {
		t.Errorf("%d requests reached nothing (%v), want 0\n%s", rep.ReachedNothing, rep.Reasons, f.LogTail("web-1", 3000))
	}
	return version
}

// TestDeployerKilledInEachPhase is the fault matrix's deployer-kill, one
// case per phase: the real `mythex deploy` process, under load, is
// SIGKILLed when its progress output says a host began the phase — web-2,
// the second host of three, for the phases of a host's deploy; web-1 for
// release, after the fleet's sweep and its commit. Nothing finishes that
// deploy; the agents' lease-expiry recovery must return every host to its
// last good version — or, for release, complete the committed deploy on
// every host, so that the whole fleet ends on the new version — in rotation
// and healthy, no lease left, and no request may reach nothing (the
// recovery of a serving host keeps deploy.min_in_service and drains it
// first). The cases share two fleets, three cases each in turn:
// each case leaves its fleet whole for the next.
func TestDeployerKilledInEachPhase(t *testing.T) {
	t.Parallel() // its groups own their fleets
	if testing.Short() {
		t.Skip("end-to-end: a fleet of real processes")
	}
	bin, err := testbin.Build(testbin.Mythex)
	if err != nil {
		t.Fatal(err)
	}
	// Starved beside the Docker demo's container starts, a new host fails
	// its 400 ms health checks and the deploy ends before the kill point.
	// Taken before the groups' fleet slots (testbin.FleetSlot's order).
	testbin.Exclusive(t, testbin.DockerStartsLock)
	type kcase struct {
		phase deploy.Phase
		host  string
		// committed: the kill comes after the deploy's commit point
		// (every host recorded that the fleet passed the final sweep),
		// so every host completes the release and the fleet ends on the
		// new version. Otherwise it ends on the version it ran before.
		committed bool
	}
	groups := map[string][]kcase{
		"fleet-a": {{deploy.PhaseLease, "web-2", false}, {deploy.PhaseStop, "web-2", false}, {deploy.PhaseVerify, "web-2", false}},
		"fleet-b": {{deploy.PhaseDrain, "web-2", false}, {deploy.PhaseStart, "web-2", false}, {deploy.PhaseRelease, "web-1", true}},
	}
	for name, cases := range groups {
		t.Run(name, func(t *testing.T) {
			t.Parallel()              // each group owns its fleet: ports, dirs, processes
			testbin.FleetSlotFirst(t) // three cases in turn: among the longest fleets
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			f := faultFleet(t, ctx, bin, 3)
			before := "v1"
			for i, tc := range cases {
				version := fmt.Sprintf("v%d", i+2)
				ok := t.Run(string(tc.phase), func(t *testing.T) {
					begin := time.Now()
					p := load(t, f)
					at, _, err := f.DeployKilledAt(ctx, bin, version, func(e deploy.Event) bool {
						return e.Host == tc.host && e.Phase == tc.phase && e.Kind == deploy.EventBegin
					}, nil)
					if at == nil {
						p.Stop()
						t.Fatalf("the deployer was not killed at %s's %s: %v", tc.host, tc.phase, err)
					}
					got := settleAndCount(t, f, p, "deployer killed as "+tc.host+" began "+string(tc.phase), !tc.committed)
					switch {
					case tc.committed && got != version:
						t.Errorf("the fleet ends on %s, want %s on every host: the deploy had committed", got, version)
					case !tc.committed && got != before:
						t.Errorf("the fleet ends on %s, want %s, the version it ran before", got, before)
					}
					if tc.committed {
						before = version
						// Which hosts completed the release themselves (the
						// others the deployer released before the kill
						// landed): logged, not asserted — it is a race.
						var released []string
						for i, h := range f.Loaded.Hosts {
							if st, err := f.Agent(i).Status(ctx); err == nil && st.Recovery != nil && st.Recovery.Released {
								released = append(released, h.Name)
							}
						}
						t.Logf("hosts that completed the committed release on their own: %v", released)
					}
					t.Logf("case took %v", time.Since(begin).Round(100*time.Millisecond))
				})
				if !ok {
					return // the fleet is not whole: the next cases would judge its leftovers
				}
			}
		})
	}
}

// TestTwoDeploysAtOnce is the fault matrix's two deploys at once: under
// load, v2 and v3 start together. The fleet lease lets one through; the
// other is refused before it changes anything, with a message naming the
// holder. The fleet ends on the winner's version, verified everywhere, and
// no request reaches nothing.
func TestTwoDeploysAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: a fleet of real processes")
	}
	bin, err := testbin.Build(testbin.Mythex)
	if err != nil {
		t.Fatal(err)
	}
	t.Parallel()
	testbin.FleetSlot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := faultFleet(t, ctx, bin, 2)
	p := load(t, f)
	versions := []string{"v2", "v3"}
	errs := make([]error, len(versions))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, v := range versions {
		wg.Go(func() {
			<-start
			_, errs[i] = f.Deploy(ctx, v, nil, nil)
		})
	}
	close(start)
	wg.Wait()
	winner, loser := -1, -1
	for i, err := range errs {
		switch {
		case err == nil:
			winner = i
		case errors.Is(err, deploy.ErrInProgress):
			loser = i
		default:
			t.Errorf("deploy %s: %v, want it through or refused as in progress", versions[i], err)
		}
	}
	if winner < 0 || loser < 0 {
		t.Fatalf("deploys %v: %v; want one through and one refused", versions, errs)
	}
	msg := errs[loser].Error()
	t.Logf("refused: %s", msg)
	if holder := "mythex demo " + versions[winner]; !strings.Contains(msg, holder) {
		t.Errorf("the refusal does not name the holder %q: %s", holder, msg)
	}
	if version := settleAndCount(t, f, p, "two deploys at once", true); version != versions[winner] {
		t.Errorf("the fleet ends on %s, want the winner's %s", version, versions[winner])
	}
}

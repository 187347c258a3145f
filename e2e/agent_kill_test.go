package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/demo"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/probe"
	"github.com/mythex/mythex/internal/testbin"
)

// agentKillScale runs the write-up's fixed numbers ten times faster: checks
// every 0.5s, a 1.5s drain, a 3s deploy lease.
const agentKillScale = 0.1

// agentDownFor is how long the killed agent stays down: the 20s,
// scaled.
const agentDownFor = 2 * time.Second

// TestAgentKilledInEachPhase is the fault matrix's agent-kill: under load,
// web-1's agent is SIGKILLed as the deploy of v2 begins each phase of web-1
// (lease, publish, drain, stop, start, verify) and started again agentDownFor later.
// Whatever the deploy then does (fail, roll back, or carry on with the lease
// the restarted agent resumed), the fleet must end with every host on one
// verified version, the same everywhere, in rotation and healthy at the load
// balancer, no lease left — and no request may reach nothing.
func TestAgentKilledInEachPhase(t *testing.T) {
	t.Parallel() // its cases own their fleets
	if testing.Short() {
		t.Skip("end-to-end: a fleet of real processes")
	}
	bin, err := testbin.Build(testbin.Mythex)
	if err != nil {
		t.Fatal(err)
	}
	// One case per phase of web-1's deploy in which its agent is called:
	// verify is the look twice, whose status calls meet the dead agent.
	for _, phase := range []deploy.Phase{deploy.PhaseLease, deploy.PhasePublish, deploy.PhaseDrain, deploy.PhaseStop, deploy.PhaseStart, deploy.PhaseVerify} {
		t.Run(string(phase), func(t *testing.T) {
			t.Parallel() // each case owns its fleet: ports, dirs, processes
			testbin.FleetSlot(t)
			begin := time.Now()
			agentKilledIn(t, bin, phase)
			t.Logf("case took %v", time.Since(begin).Round(100*time.Millisecond))
		})
	}
}

func agentKilledIn(t *testing.T, bin string, phase deploy.Phase) {
	cfg, err := demo.ProfileConfig(demo.ProfileAfter, agentKillScale)
	if err != nil {
		t.Fatal(err)
	}
	// 0.2s scaled is too short a check timeout on a loaded 2-core machine;
	// 0.4s keeps every timing relation (drain 1.5s > 2 × 0.5s + 0.4s).
	cfg.LoadBalancer.HealthCheck.Timeout = 400 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f, err := demo.StartFleet(ctx, demo.FleetOptions{Config: cfg, Hosts: 2, Exe: bin, AppExe: appBin(t), Dir: t.TempDir()})
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

	p, err := probe.New(probe.Config{URL: f.URL(), Rate: 100, Timeout: testProbeTimeout}, probe.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var (
		once      sync.Once
		killed    = make(chan struct{})
		restarted = make(chan error, 1)
	)
	obs := deploy.ObserverFunc(func(e deploy.Event) {
		if e.Host != "web-1" || e.Phase != phase || e.Kind != deploy.EventBegin {
			return
		}
		once.Do(func() {
			if err := f.KillAgent(0); err != nil {
				t.Errorf("kill: %v", err)
			}
			close(killed)
			go func() {
				time.Sleep(agentDownFor)
				restarted <- f.RestartAgent(ctx, bin, 0)
			}()
		})
	})
	res, derr := f.Deploy(ctx, "v2", nil, obs)
	select {
	case <-killed:
	default:
		t.Fatalf("the deploy never began web-1's %s phase: %+v %v", phase, res, derr)
	}
	if err := <-restarted; err != nil {
		t.Fatalf("restart the agent: %v\n%s", err, f.LogTail("web-1", 3000))
	}
	t.Logf("deploy after the kill: %v", derr)

	version := waitFleetWhole(t, f, cfg.Deploy.LeaseTTL+time.Minute)
	// A tail as long as the LB needs to notice a target gone.
	hc := f.Loaded.LoadBalancer.HealthCheck
	time.Sleep(hc.Interval*time.Duration(hc.UnhealthyThreshold) + hc.Timeout)
	rep := p.Stop()
	t.Logf("killed in %s: fleet ends on %s; requests %d, reached nothing %d %v", phase, version, rep.Requests, rep.ReachedNothing, rep.Reasons)
	if rep.Requests < 100 {
		t.Errorf("only %d requests sent", rep.Requests)
	}
	if rep.ReachedNothing != 0 {
		t.Errorf("%d requests reached nothing (%v), want 0: a killed agent must cost nothing\n%s", rep.ReachedNothing, rep.Reasons, f.LogTail("web-1", 4000))
	}
}

// waitFleetWhole waits until every host runs the same version, verified
// (the agent says restored, current is last good), no lease is held, and the
// load balancer has every target healthy and in rotation. It returns the
// version.
func waitFleetWhole(t *testing.T, f *demo.Fleet, within time.Duration) string {
	t.Helper()
	return waitHostsWhole(t, f, within, true)
}

// waitHostsWhole is waitFleetWhole; without oneVersion each host may be
// whole on its own version (the versions are returned joined by "+").
func waitHostsWhole(t *testing.T, f *demo.Fleet, within time.Duration, oneVersion bool) string {
	t.Helper()
	lbc := lbapi.NewClient("http://"+f.Loaded.LoadBalancer.AdminListen, f.LBToken, nil)
	deadline := time.Now().Add(within)
	var why string
	for {
		v, reason := fleetWhole(f, lbc, oneVersion)
		if reason == "" {
			return v
		}
		why = reason
		if time.Now().After(deadline) {
			t.Fatalf("the fleet is not whole after %v: %s\n%s", within, why, f.LogTail("web-1", 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func fleetWhole(f *demo.Fleet, lbc *lbapi.Client, oneVersion bool) (string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	version := ""
	var versions []string
	for i, h := range f.Loaded.Hosts {
		st, err := f.Agent(i).Status(ctx)
		if err != nil {
			return "", fmt.Sprintf("%s: %v", h.Name, err)
		}
		d := st.Definitions
		switch {
		case st.Lease != nil || st.FleetLease != nil:
			return "", fmt.Sprintf("%s: a lease is held (%+v %+v)", h.Name, st.Lease, st.FleetLease)
		case st.Restore == nil || !st.Restore.Restored:
			return "", fmt.Sprintf("%s: not restored: %+v", h.Name, st.Restore)
		case d.Current == nil || d.LastGood == nil || d.Current.Hash != d.LastGood.Hash:
			return "", fmt.Sprintf("%s: current %+v is not the last good %+v", h.Name, d.Current, d.LastGood)
		case oneVersion && version != "" && d.Current.Version != version:
			return "", fmt.Sprintf("%s runs %s, another host %s", h.Name, d.Current.Version, version)
		}
		version = d.Current.Version
		if !slices.Contains(versions, version) {
			versions = append(versions, version)
		}
		if st.Recovery != nil && st.Recovery.State == agentapi.RecoveryRunning {
			return "", h.Name + ": recovery running"
		}
		ts, err := lbc.Target(ctx, h.Name)
		if err != nil {
			return "", fmt.Sprintf("lb %s: %v", h.Name, err)
		}
		if !ts.InRotation || ts.State != lbport.StateHealthy {
			return "", fmt.Sprintf("lb %s: %s, in rotation %v", h.Name, ts.State, ts.InRotation)
		}
	}
	return strings.Join(versions, "+"), ""
}

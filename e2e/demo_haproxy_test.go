package e2e

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/demo"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/testbin"
)

func needHAProxy(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy is not installed (Debian: apt-get install haproxy; .ci/run installs it as root)")
	}
}

func TestHAProxy_DeployUnderLoadDropsNothing(t *testing.T) {
	t.Parallel() // its own fleet: processes, ports and directories
	testbin.FleetSlot(t)
	needHAProxy(t)
	runUnderLoad(t, demo.LBHAProxy, 2)
}

func TestHAProxy_FailingReleaseRolledBack(t *testing.T) {
	t.Parallel() // its own fleet: processes, ports and directories
	testbin.FleetSlot(t)
	needHAProxy(t)
	cfg, err := demo.ProfileConfig(demo.ProfileAfter, testScale)
	if err != nil {
		t.Fatal(err)
	}
	cfg.LoadBalancer.HealthCheck.Timeout = testCheckTimeout
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f := launchFleet(ctx, t, demo.FleetOptions{Config: cfg, Hosts: 2, Dir: t.TempDir(), LB: demo.LBHAProxy})
	stop := underLoad(t, f, 100)
	_, err = f.Deploy(ctx, "v2", map[string]string{"CRASH_ON_START": "100ms"}, nil)
	rep := stop()
	var se *deploy.StepError
	if !errors.As(err, &se) || se.Host != "web-1" || se.Phase != deploy.PhaseStart || !se.RolledBack {
		t.Fatalf("err = %v, want web-1 failing at start, rolled back", err)
	}
	for i := range 2 {
		if v := versionOf(t, f.Agent(i)); v != "v1" {
			t.Errorf("web-%d is on %q, want v1", i+1, v)
		}
	}
	if rep.ReachedNothing != 0 {
		t.Errorf("%d requests reached nothing during the failed deploy and its rollback behind HAProxy (%+v)", rep.ReachedNothing, rep.Reasons)
	}
	// web-1 is back in HAProxy's rotation: a deploy of a good version goes
	// through every host afterwards.
	if _, err := f.Deploy(ctx, "v3", nil, nil); err != nil {
		t.Fatalf("a good deploy after the rollback: %v", err)
	}
}

// lb-restart: HAProxy is reloaded (as `systemctl reload haproxy`) right
// after web-1 was drained. The reload puts every server back to haproxy.cfg's
// state — web-1 ready again — so with drain_mode both it is HAProxy's health
// checks, seeing web-1's flipped health endpoint, that take it out before its
// serve period ends; the deploy then sets it ready and carries on.
func TestHAProxy_ReloadMidDeploy(t *testing.T) {
	t.Parallel()              // its own fleet: processes, ports and directories
	testbin.FleetSlotFirst(t) // at a wider scale: among the longest fleets
	needHAProxy(t)
	// A wider scale than the other tests: the reload itself takes time out
	// of the serve period on a loaded machine.
	cfg, err := demo.ProfileConfig(demo.ProfileAfter, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Deploy.DrainMode != fleet.DrainModeBoth {
		t.Fatalf("the after profile drains by %s; this test needs both", cfg.Deploy.DrainMode)
	}
	cfg.LoadBalancer.HealthCheck.Timeout = testCheckTimeout
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	f := launchFleet(ctx, t, demo.FleetOptions{Config: cfg, Hosts: 2, Dir: t.TempDir(), LB: demo.LBHAProxy})
	stop := underLoad(t, f, 100)
	reloaded := false
	var reloadErr error
	obs := deploy.ObserverFunc(func(e deploy.Event) {
		// Observer calls are serial and the deploy waits for them: the
		// reload is done before web-1's services are told to stop.
		if e.Host == "web-1" && e.Phase == deploy.PhaseStop && e.Kind == deploy.EventBegin && !reloaded {
			reloaded, reloadErr = true, f.RestartLB(ctx) // HAProxy: a reload
		}
	})
	_, err = f.Deploy(ctx, "v2", nil, obs)
	rep := stop()
	if !reloaded || reloadErr != nil {
		t.Fatalf("reload: happened %v, %v", reloaded, reloadErr)
	}
	if err != nil {
		t.Fatalf("deploy across an HAProxy reload: %v", err)
	}
	for i := range 2 {
		if v := versionOf(t, f.Agent(i)); v != "v2" {
			t.Errorf("web-%d is on %q, want v2", i+1, v)
		}
	}
	if rep.ReachedNothing != 0 {
		t.Errorf("%d requests reached nothing across the reload (%+v)", rep.ReachedNothing, rep.Reasons)
	}
}

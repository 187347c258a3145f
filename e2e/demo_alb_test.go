package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/demo"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/lb"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/testbin"
)

// startALBFleet starts a fleet whose deploys drive the embedded LB through
// the alb driver and its ELBv2 endpoint, and rolls out v1.
func startALBFleet(t *testing.T, throttle float64) *demo.Fleet {
	t.Helper()
	cfg, err := demo.SuiteConfig(testScale) // the after profile, testCheckTimeout
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return launchFleet(ctx, t, demo.FleetOptions{Config: cfg, Hosts: 2, Dir: t.TempDir(), LB: demo.LBALB,
		LBPoll: time.Duration(float64(lbport.DefaultPollInterval) * testScale), ELBv2Throttle: throttle})
}

func TestDemo_ALBDriverDeployUnderLoadDropsNothing(t *testing.T) {
	t.Parallel() // its own fleet: processes, ports and directories
	testbin.FleetSlot(t)
	_, d := runUnderLoad(t, demo.LBALB, 2)
	// Each host: a deregistration, a registration and the polls between.
	if d.LBCalls < 2*3 {
		t.Errorf("%d ELBv2 calls for 2 hosts: the deploy did not go through the alb driver", d.LBCalls)
	}
}

func TestFleet_ALBThrottledDeployIsSlowerButSucceeds(t *testing.T) {
	t.Parallel()
	testbin.FleetSlotFirst(t) // 20 s or more: among the longest fleets
	// 2 ELBv2 calls a second, for every caller.
	f := startALBFleet(t, 2)
	stop := underLoad(t, f, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := f.Deploy(ctx, "v2", nil, nil)
	rep := stop()
	if err != nil {
		t.Fatalf("throttled deploy failed: %v", err)
	}
	if rep.ReachedNothing != 0 {
		t.Errorf("reached nothing %d, want 0", rep.ReachedNothing)
	}
	throttled := 0.0
	mfs, err := f.LB.Metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "mythex_lb_elbv2_calls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "code" && l.GetValue() == "ThrottlingException" {
					throttled += m.GetCounter().GetValue()
				}
			}
		}
	}
	if throttled == 0 {
		t.Fatalf("no call was throttled at 2 calls/s (%d calls): the test proves nothing", f.LBCalls)
	}
	t.Logf("deploy took %.1fs with %d calls, %.0f answered ThrottlingException", res.Seconds, f.LBCalls, throttled)
}

func TestFleet_ALBRefusalsChangeNothing(t *testing.T) {
	t.Parallel() // its own fleet: processes, ports and directories
	testbin.FleetSlot(t)
	f := startALBFleet(t, 0)
	before := f.LB.Group.Targets()
	tests := []struct {
		name    string
		mutate  func(f *demo.Fleet) (undo func())
		mention string
	}{
		{"bad signature", func(f *demo.Fleet) func() {
			k := f.ELBv2Key
			f.ELBv2Key.SecretAccessKey = "wrong"
			return func() { f.ELBv2Key = k }
		}, "secret access key"},
		{"unknown target group", func(f *demo.Fleet) func() {
			l := *f.Loaded
			f.Loaded.LoadBalancer.TargetGroupARN = strings.Replace(lb.DefaultTargetGroupARN, "/mythex/", "/gone/", 1)
			return func() { *f.Loaded = l }
		}, "targetgroup/gone/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			undo := tc.mutate(f)
			defer undo()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := f.Deploy(ctx, "v2", nil, nil)
			if !errors.Is(err, deploy.ErrPreflight) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("deploy = %v, want a preflight error (exit 2) mentioning %q", err, tc.mention)
			}
			for i := range f.Loaded.Hosts {
				if v := versionOf(t, f.Agent(i)); v != "v1" {
					t.Errorf("%s runs %q after a refused deploy, want v1", f.Loaded.Hosts[i].Name, v)
				}
			}
			after := f.LB.Group.Targets()
			if len(after) != len(before) {
				t.Fatalf("targets %d after, %d before", len(after), len(before))
			}
			for i := range after {
				if after[i].State != before[i].State || after[i].ID != before[i].ID {
					t.Errorf("target %s: %s after, %s before", after[i].ID, after[i].State, before[i].State)
				}
			}
		})
	}
}

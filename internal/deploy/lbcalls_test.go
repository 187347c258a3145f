package deploy

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
)

// countingLB counts the calls a deploy makes to the load balancer's API, as
// the ELBv2 API would bill them: Describe (DescribeTargetHealth) apart from
// Register and Deregister.
type countingLB struct {
	*fakeLB
	describes, changes atomic.Int64
}

func (c *countingLB) Describe(ctx context.Context, refs ...lbport.TargetRef) ([]lbport.Target, error) {
	c.describes.Add(1)
	return c.fakeLB.Describe(ctx, refs...)
}

func (c *countingLB) Register(ctx context.Context, r lbport.TargetRef) error {
	c.changes.Add(1)
	return c.fakeLB.Register(ctx, r)
}

func (c *countingLB) Deregister(ctx context.Context, r lbport.TargetRef) error {
	c.changes.Add(1)
	return c.fakeLB.Deregister(ctx, r)
}

// albConfig is an ALB target group's numbers: a 5 s health check, the 15 s
// propagation grace, a 10 s min_healthy_time; its services serve 5 s after
// SIGTERM.
func albConfig(batch int) *fleet.Config {
	c := fleet.Default()
	c.LoadBalancer.Kind = fleet.KindALB
	c.LoadBalancer.HealthCheck.Interval = 5 * time.Second
	c.LoadBalancer.HealthCheck.Timeout = 2 * time.Second
	c.LoadBalancer.HealthCheck.HealthyThreshold = 2
	c.LoadBalancer.DeregistrationDelay = 30 * time.Second
	c.LoadBalancer.PropagationMargin = 15 * time.Second
	c.Drain.ServePeriod = 5 * time.Second
	c.Drain.Max = 2 * time.Minute
	c.Deploy.DrainMode = fleet.DrainModeDeregister
	c.Deploy.BatchSize = batch
	c.Deploy.Verify = services
	return &c
}

// Issue 10's budget: an ALB's Describe* calls share one token bucket per
// account and Region with every other tool, so a deploy makes at most one
// ELBv2 call per 2 s of its run — the drain, the return, the look twice,
// the capacity checks, the recheck and the sweep all read targets through
// one Poller, which polls every 2 s within a budget of PollBurst calls plus
// one per 2 s.
// Run in a synctest bubble: minutes of an ALB deploy in milliseconds.
func TestDeployer_Run_ELBv2CallBudget(t *testing.T) {
	tests := []struct {
		name         string
		hosts, batch int
	}{
		{"one host at a time", 3, 1},
		{"two hosts per batch", 4, 2},
	}
	for _, tc := range tests {
		bubbleRun(t, tc.name, func(t *testing.T) {
			f := newFixture(tc.hosts)
			for _, a := range f.agents {
				a.stopTakes = 5 * time.Second
			}
			lb := &countingLB{fakeLB: f.lb}
			o := f.options(albConfig(tc.batch), "v2")
			o.LB, o.Poll = lb, lbport.DefaultPollInterval
			d, err := New(o)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			res, err := d.Run(ctx)
			if err != nil || !res.OK {
				t.Fatalf("Run: %v (%+v)", err, res)
			}
			took := time.Duration(res.Seconds * float64(time.Second))
			var hostSecs float64
			for _, h := range res.Hosts {
				hostSecs += h.Seconds
			}
			describes, changes := lb.describes.Load(), lb.changes.Load()
			perHost := float64(describes+changes) / float64(tc.hosts)
			t.Logf("%d hosts in %v: %d DescribeTargetHealth, %d Register/Deregister: %.1f calls per host deploy of %.1fs on average, %.2f per 2 s",
				tc.hosts, took, describes, changes, perHost, hostSecs/float64(tc.hosts), float64(describes+changes)/(hostSecs/2))
			if limit := lbport.PollBurst + int64(took/lbport.DefaultPollInterval); describes > limit {
				t.Errorf("%d Describe calls in %v: more than the Poller's burst and one per poll interval (%d)", describes, took, limit)
			}
			if changes != int64(2*tc.hosts) {
				t.Errorf("%d Register/Deregister calls, want %d (one each per host)", changes, 2*tc.hosts)
			}
			// As bench/alb.sh counts: every call of the deploy (preflight,
			// capacity and sweep included) per 2 s of host deploy.
			if budget := hostSecs / 2; float64(describes+changes) > budget {
				t.Errorf("%d ELBv2 calls for %.1fs of host deploys: over the budget of one per 2 s (%.0f)", describes+changes, hostSecs, budget)
			}
		})
	}
}

package timing

import (
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

func TestRemovalOf(t *testing.T) {
	cases := []struct {
		name      string
		edit      func(c *fleet.Config)
		path      removalPath
		at, worst time.Duration
		byDelay   bool
	}{
		{name: "health path: I·U + T", path: byHealthCheck, at: 12 * sec, worst: 12 * sec},
		{name: "health path starts after pre_stop and adds propagation", edit: func(c *fleet.Config) {
			c.Drain.PreStop, c.Backend.StopGracePeriod, c.LoadBalancer.PropagationMargin = 5*sec, 60*sec, 15*sec
		}, path: byHealthCheck, at: 32 * sec, worst: 32 * sec},
		// Issue 13: the ALB's own nodes run its health checks; a config safe
		// in production failed when the 15s margin was added here.
		{name: "ALB health path: no propagation margin", edit: func(c *fleet.Config) {
			c.LoadBalancer.Kind, c.LoadBalancer.PropagationMargin, c.LoadBalancer.PropagationMax = fleet.KindALB, 15*sec, 40*sec
		}, path: byHealthCheck, at: 12 * sec, worst: 12 * sec},
		{name: "health path with an uncertain propagation", edit: func(c *fleet.Config) {
			c.LoadBalancer.PropagationMargin, c.LoadBalancer.PropagationMax = 10*sec, 40*sec
		}, path: byHealthCheck, at: 22 * sec, worst: 52 * sec},
		{name: "deregistration: propagation only", edit: func(c *fleet.Config) {
			c.Deploy.DrainMode, c.LoadBalancer.PropagationMargin = fleet.DrainModeDeregister, 2*sec
		}, path: byDeregistration, at: 2 * sec, worst: 2 * sec},
		{name: "ALB instance targets ignore the deregistration delay", edit: func(c *fleet.Config) {
			c.Deploy.DrainMode, c.LoadBalancer.Kind, c.LoadBalancer.PropagationMargin = fleet.DrainModeDeregister, fleet.KindALB, 15*sec
			c.LoadBalancer.TargetType, c.LoadBalancer.DeregistrationDelay = fleet.TargetTypeInstance, 300*sec
		}, path: byDeregistration, at: 15 * sec, worst: 15 * sec},
		{name: "ALB ip targets are bounded by the deregistration delay", edit: func(c *fleet.Config) {
			c.Deploy.DrainMode, c.LoadBalancer.Kind, c.LoadBalancer.PropagationMargin = fleet.DrainModeDeregister, fleet.KindALB, 15*sec
			c.LoadBalancer.TargetType, c.LoadBalancer.DeregistrationDelay = fleet.TargetTypeIP, 300*sec
		}, path: byDeregistration, at: 300 * sec, worst: 300 * sec, byDelay: true},
		{name: "ALB ip targets: propagation_max above the delay wins", edit: func(c *fleet.Config) {
			c.Deploy.DrainMode, c.LoadBalancer.Kind, c.LoadBalancer.PropagationMargin = fleet.DrainModeDeregister, fleet.KindALB, 15*sec
			c.LoadBalancer.TargetType, c.LoadBalancer.DeregistrationDelay = fleet.TargetTypeIP, 10*sec
			c.LoadBalancer.PropagationMax = 40 * sec
		}, path: byDeregistration, at: 15 * sec, worst: 40 * sec},
		{name: "ALB ip targets: a delay under the margin does not bind", edit: func(c *fleet.Config) {
			c.Deploy.DrainMode, c.LoadBalancer.Kind, c.LoadBalancer.PropagationMargin = fleet.DrainModeDeregister, fleet.KindALB, 15*sec
			c.LoadBalancer.TargetType, c.LoadBalancer.DeregistrationDelay = fleet.TargetTypeIP, 10*sec
		}, path: byDeregistration, at: 15 * sec, worst: 15 * sec},
		{name: "ip targets off the ALB: no delay bound", edit: func(c *fleet.Config) {
			c.Deploy.DrainMode, c.LoadBalancer.TargetType, c.LoadBalancer.DeregistrationDelay = fleet.DrainModeDeregister, fleet.TargetTypeIP, 300*sec
		}, path: byDeregistration, at: 0, worst: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fleetWith(t, tc.edit)
			got := removalOf(&c)
			if got.path != tc.path || got.at != tc.at || got.worst != tc.worst || got.atIsDeregDelay != tc.byDelay {
				t.Errorf("removalOf = %+v, want path %v at %v worst %v byDelay %v", got, tc.path, tc.at, tc.worst, tc.byDelay)
			}
		})
	}
}

func TestCloseAt(t *testing.T) {
	cases := []struct {
		name          string
		p, d, g, want time.Duration
	}{
		{"serve period after pre_stop", 5 * sec, 15 * sec, 30 * sec, 20 * sec},
		{"SIGKILL first", 25 * sec, 15 * sec, 30 * sec, 30 * sec},
		{"closes at SIGTERM with no pre_stop", 0, 0, 300 * sec, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fleetWith(t, func(c *fleet.Config) {
				c.Drain.PreStop, c.Drain.ServePeriod, c.Backend.StopGracePeriod = tc.p, tc.d, tc.g
			})
			if got := closeAt(&c); got != tc.want {
				t.Errorf("closeAt = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDescribeRemoval(t *testing.T) {
	cases := []struct {
		name string
		edit func(c *fleet.Config)
		want string
	}{
		{"both", nil, "any other SIGTERM has only the health check"},
		{"instance deregistration", func(c *fleet.Config) { c.Deploy.DrainMode = fleet.DrainModeDeregister }, "deregistration delay does not govern removal"},
		{"ALB ip deregistration", func(c *fleet.Config) {
			c.Deploy.DrainMode, c.LoadBalancer.Kind, c.LoadBalancer.TargetType = fleet.DrainModeDeregister, fleet.KindALB, fleet.TargetTypeIP
		}, "not before the deregistration delay ends"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fleetWith(t, tc.edit)
			if got := describeRemoval(&c); !strings.Contains(got, tc.want) {
				t.Errorf("describeRemoval = %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

package timing

import (
	"slices"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

func TestNumericFields(t *testing.T) {
	want := []string{
		"load_balancer.health_check.interval",
		"load_balancer.health_check.timeout",
		"load_balancer.health_check.healthy_threshold",
		"load_balancer.health_check.unhealthy_threshold",
		"load_balancer.deregistration_delay",
		"load_balancer.idle_timeout",
		"load_balancer.propagation_margin",
		"load_balancer.propagation_max",
		"drain.pre_stop",
		"drain.serve_period",
		"drain.shutdown_timeout",
		"drain.max",
		"backend.keepalive_idle_timeout",
		"backend.stop_grace_period",
		"backend.longest_request",
		"watchdog.interval",
		"watchdog.failures_before_heal",
		"deploy.batch_size",
		"deploy.lease_ttl",
		"deploy.min_healthy_time",
		"deploy.hooks.timeout",
		"timing.quick_return_max",
		"timing.margin",
	}
	var got []string
	for _, f := range numericFields() {
		got = append(got, f.path)
	}
	if !slices.Equal(got, want) {
		t.Errorf("numeric fields:\n got %q\nwant %q", got, want)
	}
}

func TestNumField_GetSet(t *testing.T) {
	cases := []struct {
		name, path string
		duration   bool
		v          int64
		read       func(c *fleet.Config) int64
	}{
		{"duration", "drain.serve_period", true, int64(7 * time.Second), func(c *fleet.Config) int64 { return int64(c.Drain.ServePeriod) }},
		{"nested duration", "load_balancer.health_check.interval", true, int64(time.Second), func(c *fleet.Config) int64 { return int64(c.LoadBalancer.HealthCheck.Interval) }},
		{"count", "watchdog.failures_before_heal", false, 9, func(c *fleet.Config) int64 { return int64(c.Watchdog.FailuresBeforeHeal) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := lookupField(tc.path)
			if !ok {
				t.Fatalf("%s not found", tc.path)
			}
			if f.duration != tc.duration {
				t.Errorf("duration = %v, want %v", f.duration, tc.duration)
			}
			c := fleet.Default()
			f.set(&c, tc.v)
			if got := tc.read(&c); got != tc.v {
				t.Errorf("after set, field = %d, want %d", got, tc.v)
			}
			if got := f.get(&c); got != tc.v {
				t.Errorf("get = %d, want %d", got, tc.v)
			}
		})
	}
	if _, ok := lookupField("hosts.name"); ok {
		t.Errorf("a string field must not be numeric")
	}
}

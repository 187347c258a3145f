package timing

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

func breaksOf(rep Report, name string) []string {
	var out []string
	for _, r := range rep.Results {
		if r.Name == name {
			for _, b := range r.Breaks {
				out = append(out, fmt.Sprintf("%s %s %s", b.Field, b.Op, b.Value))
			}
		}
	}
	return out
}

func TestCheck_BreakPoints(t *testing.T) {
	cases := []struct {
		name      string
		edit      func(c *fleet.Config)
		invariant string
		want      []string
	}{
		{name: "seed after: overlap", invariant: "overlap", want: []string{
			"drain.serve_period <= 12s",
			"drain.pre_stop >= 18s",
			"backend.stop_grace_period <= 12s",
			"load_balancer.health_check.interval >= 6.5s",
			"load_balancer.health_check.unhealthy_threshold >= 3",
			"load_balancer.health_check.timeout >= 5s",
			"load_balancer.propagation_margin >= 3s",
			"timing.margin >= 3s",
		}},
		{name: "seed after: watchdog", invariant: "watchdog-patience", want: []string{
			"watchdog.failures_before_heal <= 3",
			"watchdog.interval < 50s",
			"drain.max > 180s",
		}},
		{name: "seed after: keep-alive has breaks on both sides of the LB idle timeout", invariant: "keep-alive", want: []string{
			"backend.keepalive_idle_timeout <= 60s",
			"load_balancer.idle_timeout <= 5s",
			"load_balancer.idle_timeout >= 75s",
			"backend.longest_request >= 60s",
		}},
		{name: "seed before: overlap only holds with a faster check", invariant: "overlap", edit: func(c *fleet.Config) {
			c.LoadBalancer.HealthCheck.Interval, c.Drain.ServePeriod, c.Deploy.DrainMode = 30*sec, 5*sec, fleet.DrainModeHealth
		}, want: []string{"load_balancer.health_check.interval >= 1.5s"}},
		{name: "a failing overlap that a longer serve period fixes", invariant: "overlap", edit: func(c *fleet.Config) {
			c.LoadBalancer.HealthCheck.Interval, c.Drain.ServePeriod, c.Backend.StopGracePeriod = 30*sec, 5*sec, 120*sec
		}, want: []string{
			"drain.serve_period <= 62s",
			"load_balancer.health_check.interval >= 1.5s",
		}},
		{name: "ALB ranges give two-sided breaks", invariant: "check-timeout", edit: func(c *fleet.Config) {
			c.LoadBalancer.Kind, c.LoadBalancer.HealthCheck.Interval = fleet.KindALB, 10*sec
		}, want: []string{
			"load_balancer.health_check.timeout < 2s",
			"load_balancer.health_check.timeout >= 10s",
			"load_balancer.health_check.interval < 5s",
			"load_balancer.health_check.interval > 300s",
			"load_balancer.health_check.healthy_threshold <= 1",
			"load_balancer.health_check.healthy_threshold >= 11",
			"load_balancer.health_check.unhealthy_threshold <= 1",
			"load_balancer.health_check.unhealthy_threshold >= 11",
			"load_balancer.deregistration_delay > 3600s",
			"load_balancer.idle_timeout < 1s",
			"load_balancer.idle_timeout > 4000s",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := breaksOf(Check(fleetWith(t, tc.edit)), tc.invariant)
			if !slices.Equal(got, tc.want) {
				t.Errorf("breaks of %s:\n got %q\nwant %q", tc.invariant, got, tc.want)
			}
		})
	}
}

// TestCheck_BreakPointsAreEdges checks every break point of every fixture:
// at the printed edge the invariant is on the side the operator says, and one
// step (1ns, or a count of 1) across the edge it is on the other side.
func TestCheck_BreakPointsAreEdges(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "cases", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "..", "examples", "seed", "before.yml"), filepath.Join("..", "..", "examples", "seed", "after.yml"))
	checked := 0
	for _, file := range files {
		l, err := fleet.Load(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		rep := Check(l.Config)
		for i, r := range rep.Results {
			inv := invariants[i]
			for _, b := range r.Breaks {
				f, ok := lookupField(b.Field)
				if !ok {
					t.Fatalf("%s: break on unknown field %s", file, b.Field)
				}
				v := parseValue(t, f, b.Value)
				failsAt := func(x int64) bool {
					c := l.Config
					f.set(&c, x)
					return levelOf(inv, &c) == Fail
				}
				var edgeFails bool
				var across int64
				switch b.Op {
				case OpLessEq:
					edgeFails, across = true, v+1
				case OpGreaterEq:
					edgeFails, across = true, v-1
				case OpLess:
					edgeFails, across = false, v-1
				case OpGreater:
					edgeFails, across = false, v+1
				}
				if failsAt(v) != edgeFails || failsAt(across) == edgeFails {
					t.Errorf("%s: %s: break %s %s %s is not an edge (fails at %s: %v, at %d: %v)",
						file, r.Name, b.Field, b.Op, b.Value, b.Value, failsAt(v), across, failsAt(across))
				}
				checked++
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked only %d break points; the fixtures should give many more", checked)
	}
}

func parseValue(t *testing.T, f numField, s string) int64 {
	t.Helper()
	if f.duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s: break value %q: %v", f.path, s, err)
		}
		return int64(d)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s: break value %q: %v", f.path, s, err)
	}
	return n
}

func TestRoundness(t *testing.T) {
	cases := []struct {
		name string
		v    int64
		want int
	}{
		{"12s", int64(12 * time.Second), 9},
		{"6.5s", int64(6500 * time.Millisecond), 8},
		{"one nanosecond past", int64(12*time.Second) + 1, 0},
		{"count", 3, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := roundness(tc.v); got != tc.want {
				t.Errorf("roundness(%d) = %d, want %d", tc.v, got, tc.want)
			}
		})
	}
}

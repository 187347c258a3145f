package timing

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// boundConfig is a valid fleet with short, distinct timings.
func boundConfig(mode string) *fleet.Config {
	c := fleet.Default()
	c.LoadBalancer.HealthCheck.Interval = 10 * time.Millisecond
	c.LoadBalancer.HealthCheck.Timeout = 5 * time.Millisecond
	c.LoadBalancer.HealthCheck.HealthyThreshold = 2
	c.Drain.ServePeriod = 20 * time.Millisecond
	c.Deploy.DrainMode = mode
	c.Deploy.MinHealthyTime = 20 * time.Millisecond
	return &c
}

func TestBound_MarshalJSON(t *testing.T) {
	b, err := json.Marshal(Bound{Stop: 1500 * time.Millisecond, Healthy: 500 * time.Millisecond, Verify: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"drain_seconds":0,"stop_seconds":1.5,"start_seconds":0,"healthy_seconds":0.5,"verify_seconds":1,"total_seconds":3}`
	if string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
}

func TestLowerBound(t *testing.T) {
	cfg := fleet.Default()
	cfg.LoadBalancer.HealthCheck.Interval = 5 * time.Second
	cfg.LoadBalancer.HealthCheck.HealthyThreshold = 2
	cfg.LoadBalancer.HealthCheck.UnhealthyThreshold = 2
	cfg.Drain.ServePeriod = 15 * time.Second
	cases := []struct {
		mode string
		want Bound
	}{
		// min_healthy_time (default 10s) lengthens every host's deploy.
		{fleet.DrainModeBoth, Bound{Stop: 15 * time.Second, Verify: 10 * time.Second}},
		{fleet.DrainModeDeregister, Bound{Stop: 15 * time.Second, Verify: 10 * time.Second}},
		{fleet.DrainModeHealth, Bound{Drain: 5 * time.Second, Stop: 10 * time.Second, Healthy: 5 * time.Second, Verify: 10 * time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			cfg.Deploy.DrainMode = tc.mode
			if got := LowerBound(&cfg); got != tc.want {
				t.Errorf("LowerBound = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLowerBound_HAProxy(t *testing.T) {
	cfg := boundConfig(fleet.DrainModeDeregister)
	cfg.LoadBalancer.HealthCheck.Interval = time.Second
	cfg.LoadBalancer.HealthCheck.UnhealthyThreshold = 2
	cfg.LoadBalancer.HealthCheck.HealthyThreshold = 3
	cfg.Drain.ServePeriod = 3 * time.Second
	if b := LowerBound(cfg); b.Healthy != 0 {
		t.Fatalf("embedded: %+v, want healthy 0 (registered again: one passed check)", b)
	}
	cfg.LoadBalancer.Kind = fleet.KindHAProxy
	if b := LowerBound(cfg); b.Healthy != 2*time.Second || !strings.Contains(b.Explain(), "DOWN") {
		t.Fatalf("haproxy, stopped long enough to go DOWN: %+v, want healthy (3−1)×1s", b)
	}
	cfg.Drain.ServePeriod = 500 * time.Millisecond
	if b := LowerBound(cfg); b.Healthy != 0 {
		t.Fatalf("haproxy, back before a check could fail twice: %+v, want healthy 0", b)
	}
}

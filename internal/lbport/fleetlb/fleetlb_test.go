package fleetlb

import (
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
)

func TestRef(t *testing.T) {
	tests := []struct {
		name string
		kind string
		h    fleet.Host
		want lbport.TargetRef
	}{
		{"embedded: the host's name", fleet.KindEmbedded, fleet.Host{Name: "web-1", Target: "127.0.0.1:9101"}, lbport.TargetRef{ID: "web-1", Address: "127.0.0.1:9101"}},
		{"alb ip: the target's host", fleet.KindALB, fleet.Host{Name: "web-1", Target: "10.0.1.7:8080"}, lbport.TargetRef{ID: "10.0.1.7", Address: "10.0.1.7:8080"}},
		{"alb instance: target_id", fleet.KindALB, fleet.Host{Name: "web-1", Target: "10.0.1.7:8080", TargetID: "i-0abc"}, lbport.TargetRef{ID: "i-0abc", Address: "10.0.1.7:8080"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Ref(fleet.LoadBalancer{Kind: tc.kind}, tc.h); got != tc.want {
				t.Fatalf("Ref = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDrift(t *testing.T) {
	want := lbport.Settings{HealthCheck: lbport.HealthCheck{Path: "/healthz", Interval: 5 * time.Second, Timeout: 2 * time.Second,
		HealthyThreshold: 2, UnhealthyThreshold: 2}, DeregistrationDelay: 30 * time.Second, Algorithm: "round_robin"}
	live := want
	if d := Drift(want, live); len(d) != 0 {
		t.Fatalf("no drift expected, got %+v", d)
	}
	live.HealthCheck.Interval = 30 * time.Second
	live.DeregistrationDelay = 300 * time.Second
	live.SlowStart = 30 * time.Second
	d := Drift(want, live)
	if len(d) != 3 || d[0].Field != "load_balancer.health_check.interval" || d[0].File != "5s" || d[0].Live != "30s" ||
		d[1].Field != "load_balancer.deregistration_delay" {
		t.Fatalf("drift = %+v", d)
	}
	c := WithLive(fleet.Config{}, live)
	if c.LoadBalancer.HealthCheck.Interval != 30*time.Second || c.LoadBalancer.DeregistrationDelay != 300*time.Second {
		t.Fatalf("WithLive = %+v", c.LoadBalancer)
	}
}

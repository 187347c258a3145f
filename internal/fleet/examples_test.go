package fleet

import (
	"path/filepath"
	"reflect"
	"testing"
)

// TestLocalALBExample_SameFleet: examples/local/alb.yml is the local example
// fleet reached through the ELBv2 API (`mythex lb apply --help`, `mythex check
// --help`). Everything but how the load balancer is reached must stay equal to
// examples/local/mythex.yml, so that a number changed in one is not left behind
// in the other.
func TestLocalALBExample_SameFleet(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "local")
	local, err := Load(filepath.Join(dir, "mythex.yml"))
	if err != nil {
		t.Fatal(err)
	}
	alb, err := Load(filepath.Join(dir, "alb.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if alb.LoadBalancer.Kind != KindALB || alb.LoadBalancer.Endpoint != "http://"+local.LoadBalancer.AdminListen ||
		alb.LoadBalancer.Listen != local.LoadBalancer.Listen {
		t.Errorf("alb.yml load_balancer: kind %q endpoint %q listen %q; want kind alb at the local LB (endpoint http://%s, listen %s)",
			alb.LoadBalancer.Kind, alb.LoadBalancer.Endpoint, alb.LoadBalancer.Listen, local.LoadBalancer.AdminListen, local.LoadBalancer.Listen)
	}
	tests := []struct {
		name      string
		alb, want any
	}{
		{name: "hosts", alb: alb.Hosts, want: local.Hosts},
		{name: "load_balancer.health_check", alb: alb.LoadBalancer.HealthCheck, want: local.LoadBalancer.HealthCheck},
		{name: "load_balancer.deregistration_delay", alb: alb.LoadBalancer.DeregistrationDelay, want: local.LoadBalancer.DeregistrationDelay},
		{name: "load_balancer.idle_timeout", alb: alb.LoadBalancer.IdleTimeout, want: local.LoadBalancer.IdleTimeout},
		{name: "drain", alb: alb.Drain, want: local.Drain},
		{name: "backend", alb: alb.Backend, want: local.Backend},
		{name: "watchdog", alb: alb.Watchdog, want: local.Watchdog},
		{name: "deploy", alb: alb.Deploy, want: local.Deploy},
		{name: "timing", alb: alb.Timing, want: local.Timing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.alb, tt.want) {
				t.Errorf("alb.yml %s = %+v, mythex.yml has %+v", tt.name, tt.alb, tt.want)
			}
		})
	}
}

package deploy

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/lbport"
)

// portDriver reports one fixed target.
type portDriver struct {
	t   lbport.Target
	reg []lbport.TargetRef
}

func (d *portDriver) Kind() string { return "alb" }
func (d *portDriver) Register(_ context.Context, t lbport.TargetRef) error {
	d.reg = append(d.reg, t)
	return nil
}
func (d *portDriver) Deregister(context.Context, lbport.TargetRef) error { return nil }
func (d *portDriver) Settings(context.Context) (lbport.Settings, error) {
	return lbport.Settings{}, nil
}
func (d *portDriver) Apply(context.Context, lbport.Settings) error { return nil }
func (d *portDriver) Describe(_ context.Context, ts ...lbport.TargetRef) ([]lbport.Target, error) {
	out := d.t
	out.ID = ts[0].ID
	return []lbport.Target{out}, nil
}

func TestPortLB_TargetView(t *testing.T) {
	drained := func(v TargetView) bool { return !v.Registered || (!v.InRotation && v.InFlight == 0) }
	tests := []struct {
		name        string
		t           lbport.Target
		wantDrained bool
		wantHealthy bool
	}{
		{"alb healthy", lbport.Target{State: lbport.StateHealthy, InRotation: true, InFlight: -1}, false, true},
		{"alb draining: not provably idle", lbport.Target{State: lbport.StateDraining, InFlight: -1}, false, false},
		{"alb unhealthy, registered", lbport.Target{State: lbport.StateUnhealthy, InFlight: -1}, false, false},
		{"unused", lbport.Target{State: lbport.StateUnused, Reason: lbport.ReasonNotRegistered, InFlight: -1}, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &PortLB{D: &portDriver{t: tc.t}, Refs: map[string]lbport.TargetRef{"web-1": {ID: "10.0.0.1", Address: "10.0.0.1:80"}}}
			v, err := p.Target(context.Background(), "web-1")
			if err != nil {
				t.Fatal(err)
			}
			if drained(v) != tc.wantDrained {
				t.Errorf("drained = %v, want %v (%+v)", drained(v), tc.wantDrained, v)
			}
			if healthy := v.Registered && v.State == "healthy" && v.InRotation; healthy != tc.wantHealthy {
				t.Errorf("healthy = %v, want %v (%+v)", healthy, tc.wantHealthy, v)
			}
		})
	}
}

func TestPortLB_PropagationGrace(t *testing.T) {
	clock := clockwork.NewFakeClock()
	d := &portDriver{t: lbport.Target{State: lbport.StateUnused, InFlight: -1}}
	p := &PortLB{D: d, Refs: map[string]lbport.TargetRef{"web-1": {ID: "i-1", Address: "10.0.0.1:80"}}, Grace: 15 * time.Second, Clock: clock}
	ctx := context.Background()
	v, _ := p.Target(ctx, "web-1")
	if !v.Registered || v.InFlight == 0 {
		t.Fatalf("first seen unused: %+v, want still registered for the grace", v)
	}
	clock.Advance(14 * time.Second)
	if v, _ = p.Target(ctx, "web-1"); !v.Registered {
		t.Fatalf("14s into a 15s grace: %+v", v)
	}
	clock.Advance(time.Second)
	if v, _ = p.Target(ctx, "web-1"); v.Registered {
		t.Fatalf("grace over: %+v, want deregistered", v)
	}
	// Registering again starts a new grace next time.
	if err := p.Register(ctx, "web-1", "10.0.0.1:80"); err != nil || len(d.reg) != 1 || d.reg[0].ID != "i-1" {
		t.Fatalf("register: %v %+v", err, d.reg)
	}
	if v, _ = p.Target(ctx, "web-1"); !v.Registered {
		t.Fatalf("unused again after a registration: %+v, want a new grace", v)
	}
}

package deploy

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/lbport"
)

// unusedDriver reports every target unused and records registrations.
type unusedDriver struct{ reg []lbport.TargetRef }

func (d *unusedDriver) Kind() string { return "alb" }
func (d *unusedDriver) Register(_ context.Context, t lbport.TargetRef) error {
	d.reg = append(d.reg, t)
	return nil
}
func (d *unusedDriver) Deregister(context.Context, lbport.TargetRef) error { return nil }
func (d *unusedDriver) Settings(context.Context) (lbport.Settings, error) {
	return lbport.Settings{}, nil
}
func (d *unusedDriver) Apply(context.Context, lbport.Settings) error { return nil }
func (d *unusedDriver) Describe(_ context.Context, ts ...lbport.TargetRef) ([]lbport.Target, error) {
	return []lbport.Target{{ID: ts[0].ID, State: lbport.StateUnused, Reason: lbport.ReasonNotRegistered, InFlight: -1}}, nil
}

func TestLBView_PropagationGrace(t *testing.T) {
	clock := clockwork.NewFakeClock()
	d := &unusedDriver{}
	v := newLBView(d, 15*time.Second, clock)
	h := Host{Name: "web-1", Target: "10.0.0.1:80", Ref: lbport.TargetRef{ID: "i-1", Address: "10.0.0.1:80"}}
	ctx := context.Background()
	tg, _ := lbport.Describe1(ctx, v, ref(h))
	if lbport.OutOfRotation(tg) || tg.State != lbport.StateDraining {
		t.Fatalf("first seen unused: %+v, want draining for the grace", tg)
	}
	clock.Advance(14 * time.Second)
	if tg, _ = lbport.Describe1(ctx, v, ref(h)); lbport.OutOfRotation(tg) {
		t.Fatalf("14s into a 15s grace: %+v", tg)
	}
	if left := v.graceLeft(ref(h)); left != time.Second {
		t.Fatalf("grace left 14s into 15s: %v, want 1s", left)
	}
	clock.Advance(time.Second)
	if tg, _ = lbport.Describe1(ctx, v, ref(h)); !lbport.OutOfRotation(tg) || tg.State != lbport.StateUnused {
		t.Fatalf("grace over: %+v, want unused", tg)
	}
	if left := v.graceLeft(ref(h)); left != 0 {
		t.Fatalf("grace left after it: %v, want 0", left)
	}
	if err := v.Register(ctx, ref(h)); err != nil || len(d.reg) != 1 || d.reg[0].ID != "i-1" {
		t.Fatalf("register went to %+v, %v; want the host's Ref", d.reg, err)
	}
	if tg, _ = lbport.Describe1(ctx, v, ref(h)); lbport.OutOfRotation(tg) {
		t.Fatalf("unused again after a registration: %+v, want a new grace", tg)
	}
	if got := ref(Host{Name: "web-2", Target: "127.0.0.1:9102"}); got != (lbport.TargetRef{ID: "web-2", Address: "127.0.0.1:9102"}) {
		t.Fatalf("default ref = %+v", got)
	}
}

func TestLBView_NoGraceReportsAsIs(t *testing.T) {
	v := newLBView(&unusedDriver{}, 0, clockwork.NewFakeClock())
	if tg, _ := lbport.Describe1(context.Background(), v, ref(Host{Name: "web-1"})); tg.State != lbport.StateUnused {
		t.Fatalf("no grace: %+v", tg)
	}
}

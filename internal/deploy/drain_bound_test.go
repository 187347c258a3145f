package deploy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
)

// cuttingLB is a fakeLB without a deregistration timer of its own (as
// HAProxy): the deploy must cut the sessions a stuck target keeps.
type cuttingLB struct {
	*fakeLB
	cut []string
}

func (c *cuttingLB) CutSessions(_ context.Context, t lbport.TargetRef) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = append(c.cut, t.ID)
	c.targets[t.ID].inFlight = 0
	if c.stuckInFlight == t.ID {
		c.stuckInFlight = ""
	}
	return nil
}

func TestDeployer_DeregistrationBoundCutsSessions(t *testing.T) {
	tests := []struct {
		name    string
		mode    string
		delay   time.Duration
		cutter  bool
		wantCut bool
		wantOK  bool
	}{
		{"cutter at the delay", fleet.DrainModeDeregister, 30 * time.Second, true, true, true},
		{"cutter, delay beyond drain.max: drain fails at max", fleet.DrainModeDeregister, 5 * time.Minute, true, false, false},
		{"no cutter: the LB's own timer or nothing", fleet.DrainModeDeregister, 30 * time.Second, false, false, false},
		{"health mode deregisters nothing: no cut", fleet.DrainModeHealth, 30 * time.Second, true, false, false},
	}
	for _, tc := range tests {
		bubbleRun(t, tc.name, func(t *testing.T) {
			f := newFixture(2)
			f.lb.stuckInFlight = "web-1"
			cfg := testConfig(tc.mode)
			cfg.LoadBalancer.DeregistrationDelay = tc.delay
			o := f.options(cfg, "v2")
			c := &cuttingLB{fakeLB: f.lb}
			if tc.cutter {
				o.LB = c
			}
			res, err := run(t, o)
			if (err == nil) != tc.wantOK {
				t.Fatalf("Run: %v, want ok %v (%+v)", err, tc.wantOK, res)
			}
			if got := len(c.cut) > 0; got != tc.wantCut {
				t.Fatalf("cut %v, want a cut %v", c.cut, tc.wantCut)
			}
			var noted bool
			f.mu.Lock()
			for _, e := range f.events {
				if e.Kind == EventNote && e.Phase == PhaseDrain && strings.Contains(e.Detail, "deregistration_delay") {
					noted = true
				}
			}
			f.mu.Unlock()
			if noted != tc.wantCut {
				t.Fatalf("a note saying so: %v, want %v", noted, tc.wantCut)
			}
		})
	}
}

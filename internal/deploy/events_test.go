package deploy

import (
	"testing"

	"github.com/mythex/mythex/internal/fleet"
)

// TestDeployer_Run_TargetEvents: the deploy's own LB polls become
// EventTarget events, one per change, so a report can draw each target's
// state over time: healthy at the preflight, out of rotation during the
// drain, back through initial to healthy.
func TestDeployer_Run_TargetEvents(t *testing.T) {
	for _, mode := range []string{fleet.DrainModeDeregister, fleet.DrainModeHealth} {
		bubbleRun(t, mode, func(t *testing.T) {
			f := newFixture(2)
			if _, err := run(t, f.options(testConfig(mode), "v2")); err != nil {
				t.Fatalf("Run: %v", err)
			}
			seen := map[string][]TargetState{}
			for _, e := range f.events {
				if e.Kind != EventTarget {
					continue
				}
				if e.Target == nil || e.Host == "" {
					t.Fatalf("target event without a target or host: %+v", e)
				}
				states := seen[e.Host]
				if n := len(states); n > 0 {
					prev := states[n-1]
					prev.InFlight = e.Target.InFlight
					if prev == *e.Target {
						t.Errorf("%s: event for an unchanged state %+v", e.Host, *e.Target)
					}
				}
				seen[e.Host] = append(states, *e.Target)
			}
			for _, h := range []string{"web-1", "web-2"} {
				states := seen[h]
				if len(states) < 3 {
					t.Fatalf("%s: target states %+v, want at least healthy, out of rotation, healthy", h, states)
				}
				first, last := states[0], states[len(states)-1]
				if first.State != "healthy" || !first.InRotation || last.State != "healthy" || !last.InRotation {
					t.Errorf("%s: first %+v last %+v, want healthy and in rotation at both ends", h, first, last)
				}
				out := false
				for _, s := range states {
					out = out || !s.InRotation
				}
				if !out {
					t.Errorf("%s: states %+v never out of rotation, though it was drained", h, states)
				}
			}
		})
	}
}

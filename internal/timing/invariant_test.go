package timing

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/mythex/mythex/internal/fleet"
)

func TestInvariant_InputsExist(t *testing.T) {
	names := map[string]bool{}
	for _, inv := range invariants {
		if names[inv.name] {
			t.Errorf("invariant %s declared twice", inv.name)
		}
		names[inv.name] = true
		for _, in := range inv.inputs {
			if _, ok := lookupField(in); !ok {
				t.Errorf("%s: input %s is not a numeric field of fleet.Config", inv.name, in)
			}
		}
	}
	// docs/check.md's seven, then capacity (a batch must leave a host serving).
	want := []string{"overlap", "grace", "quick-return", "keep-alive", "watchdog-patience", "check-timeout", "drain-budget", "capacity"}
	var got []string
	for _, inv := range invariants {
		got = append(got, inv.name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("invariants %q, want %q", got, want)
	}
}

// TestInvariant_InputsComplete: a numeric field an invariant does not list as
// an input must not change its verdict, slack or formula; otherwise its break
// points would be missing from the report.
func TestInvariant_InputsComplete(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "cases", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "..", "examples", "seed", "before.yml"), filepath.Join("..", "..", "examples", "seed", "after.yml"))
	for _, inv := range invariants {
		t.Run(inv.name, func(t *testing.T) {
			for _, file := range files {
				l, err := fleet.Load(file)
				if err != nil {
					t.Fatal(err)
				}
				base := evaluate(inv, &l.Config)
				for _, f := range numericFields() {
					if f.index == nil || slices.Contains(inv.inputs, f.path) {
						continue
					}
					for _, d := range []direction{tooSmall, tooLarge} {
						v, ok := mutate(f, f.get(&l.Config), d)
						if !ok {
							continue
						}
						c := l.Config
						f.set(&c, v)
						got := evaluate(inv, &c)
						if got.Level != base.Level || got.Slack != base.Slack || got.Formula != base.Formula {
							t.Errorf("%s: %s = %s changes %s (%v %q → %v %q) but is not among its inputs",
								filepath.Base(file), f.path, f.format(v), inv.name, base.Level, base.Formula, got.Level, got.Formula)
						}
					}
				}
			}
		})
	}
}

func TestEvaluate_BindingRelation(t *testing.T) {
	c := fleetWith(t, func(c *fleet.Config) {
		c.Backend.LongestRequest, c.Drain.ShutdownTimeout, c.Backend.StopGracePeriod = 20*sec, 10*sec, 20*sec
	})
	r := evaluate(graceInvariant, &c)
	if r.Level != Fail || r.Slack != -15*sec {
		t.Fatalf("grace = %v %v, want fail by 15s (the longest request accepted at close binds)", r.Level, r.Slack)
	}
	if r.Formula != "listener closes at 15s + longest_request 20s = 35s ≤ stop_grace_period 20s" {
		t.Errorf("formula = %q", r.Formula)
	}
	if len(r.Notes) != 3 || !contains(r.Notes[1], "also fail: longest_request 20s ≤ shutdown_timeout 10s (short by 10s)") ||
		!contains(r.Notes[2], "also fail: serve_period 15s + shutdown_timeout 10s = 25s ≤ stop_grace_period 20s (short by 5s)") {
		t.Errorf("notes = %q, want the explanation and the other failing relation", r.Notes)
	}
}

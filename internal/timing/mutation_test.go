package timing

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// The write-up mutation-tested its timing tests: every number changed to a
// wrong value must make some test fail. Here every numeric field of
// fleet.Config (found by reflection, so a field added later is covered or
// this test fails) is set too small and too large in examples/seed/after.yml,
// and some invariant must fail. A direction in which no wrong value exists is
// exempt below, with the reason.

type direction string

const (
	tooSmall direction = "too small"
	tooLarge direction = "too large"
)

// exempt lists the mutations no invariant guards, with why that is right.
// TestCheck_MutationExemptionsAreReal fails when an exemption is no longer
// needed, so the list cannot go stale.
var exempt = map[string]map[direction]string{
	"load_balancer.health_check.timeout": {
		tooSmall: "a short timeout only makes checks stricter; no timing relation bounds it from below on the embedded LB (the ALB's 2s minimum is checked when kind is alb)",
	},
	"load_balancer.health_check.healthy_threshold": {
		tooLarge: "a slow return into rotation slows a deploy and drops no request: quick-return is marginal, never failing (TestQuickReturn_Eval)",
		tooSmall: "fewer passing checks only bring a new version back sooner; 1 is valid on the embedded LB (the ALB's minimum of 2 is checked when kind is alb)",
	},
	"load_balancer.health_check.unhealthy_threshold": {
		tooSmall: "fewer failed checks only take a draining server out sooner; flapping is not a timing relation (the ALB's minimum of 2 is checked when kind is alb)",
	},
	"load_balancer.deregistration_delay": {
		tooLarge: "a deregistered target leaves the embedded LB as soon as its in-flight requests finish; a longer delay only allows more (the ALB's 3600s maximum is checked when kind is alb)",
	},
	"load_balancer.propagation_max": {
		tooLarge: "it only widens the uncertain band: overlap becomes marginal, never failing (TestCheck_PropagationMaxIsMarginal)",
	},
	"backend.keepalive_idle_timeout": {
		tooLarge: "the backend keeping idle connections longer than the LB is the safe side of the keep-alive race",
	},
	"backend.stop_grace_period": {
		tooLarge: "a longer grace period only delays SIGKILL of a service that ignores SIGTERM; no request is cut by it",
	},
	"backend.longest_request": {
		tooSmall: "shorter requests are never unsafe, and 0 means not known",
	},
	"watchdog.interval": {
		tooLarge: "a slower watchdog heals later but never during a drain; how fast to heal is a choice, not a timing relation",
	},
	"watchdog.failures_before_heal": {
		tooLarge: "more patience heals later but never during a drain",
	},
	"deploy.hooks.timeout": {
		tooLarge: "a hook's timeout bounds a notification command around the deploy, not a relation of the fleet's timing",
	},
	"deploy.min_healthy_time": {
		tooSmall: "how long to look twice is a policy (Nomad's 10s), not a relation between the fleet's numbers; a shorter look lets later crashes through, which no timing proves",
		tooLarge: "a longer look only lengthens each host's deploy; LowerBound counts it",
	},
	"deploy.lease_ttl": {
		tooSmall: "the lease guards a dead deploy; its renewal period belongs to the deploy, not to the fleet's timing",
		tooLarge: "the lease guards a dead deploy; its renewal period belongs to the deploy, not to the fleet's timing",
	},
	"timing.quick_return_max": {
		tooSmall: "a tighter policy bound makes quick-return marginal, never failing: a slow return drops no request",
		tooLarge: "it is the policy bound itself; a looser bound is the operator's choice",
	},
}

// mutate returns the wrong value for a field in one direction, or false when
// there is none: below 0, or the smallest value fleet.Validate accepts, there
// is nothing smaller. Durations go ×100 or ÷100 (from 0, up to 1h); counts
// ×100 or down to 1.
func mutate(f numField, cur int64, d direction) (int64, bool) {
	if d == tooSmall {
		if f.duration {
			if cur == 0 {
				return 0, false
			}
			return cur / 100, true
		}
		if cur <= 1 {
			return 0, false
		}
		return 1, true
	}
	if f.duration && cur == 0 {
		return int64(time.Hour), true
	}
	return cur * 100, true
}

func loadAfter(t *testing.T) fleet.Config {
	t.Helper()
	l, err := fleet.Load(filepath.Join("..", "..", "examples", "seed", "after.yml"))
	if err != nil {
		t.Fatalf("load after.yml: %v", err)
	}
	return l.Config
}

func TestCheck_Mutation(t *testing.T) {
	base := loadAfter(t)
	if rep := Evaluate(base); rep.Level != Pass {
		t.Fatalf("after.yml must pass every invariant before mutation; got %v (failed %v, marginal %v)", rep.Level, rep.Failed(), rep.MarginalNames())
	}
	for _, f := range numericFields() {
		if f.index == nil {
			t.Errorf("%s: a numeric field inside a list; the mutation test cannot set it — guard it and teach mutate how", f.path)
			continue
		}
		for _, d := range []direction{tooSmall, tooLarge} {
			t.Run(f.path+"/"+strings.ReplaceAll(string(d), " ", "-"), func(t *testing.T) {
				if _, ok := exempt[f.path][d]; ok {
					t.Skipf("exempt: %s", exempt[f.path][d])
				}
				cur := f.get(&base)
				v, ok := mutate(f, cur, d)
				if !ok {
					t.Skipf("%s is %s, nothing is %s", f.path, f.format(cur), d)
				}
				c := base
				f.set(&c, v)
				if err := c.Validate(); err != nil {
					t.Logf("%s = %s is rejected by the loader: %v", f.path, f.format(v), err)
					return // caught before check even runs
				}
				rep := Evaluate(c)
				if rep.OK() {
					t.Errorf("%s = %s (was %s, %s): no invariant fails; guard it with an invariant or add an exemption with the reason",
						f.path, f.format(v), f.format(cur), d)
				} else {
					t.Logf("%s = %s caught by %v", f.path, f.format(v), rep.Failed())
				}
			})
		}
	}
}

// TestCheck_MutationExemptionsAreReal fails when an exempt mutation does make
// an invariant fail (the exemption is stale) or names a field that does not
// exist.
func TestCheck_MutationExemptionsAreReal(t *testing.T) {
	base := loadAfter(t)
	for path, dirs := range exempt {
		f, ok := lookupField(path)
		if !ok {
			t.Errorf("exemption for %s: no such numeric field", path)
			continue
		}
		for d := range dirs {
			v, ok := mutate(f, f.get(&base), d)
			if !ok {
				t.Errorf("exemption %s/%s: there is no %s value to exempt; remove it", path, d, d)
				continue
			}
			c := base
			f.set(&c, v)
			if c.Validate() != nil {
				t.Errorf("exemption %s/%s: the loader already rejects %s; remove it", path, d, f.format(v))
				continue
			}
			if rep := Evaluate(c); !rep.OK() {
				t.Errorf("exemption %s/%s is stale: %s = %s fails %v", path, d, path, f.format(v), rep.Failed())
			}
		}
	}
}

// TestCheck_PropagationMaxIsMarginal backs the propagation_max exemption: a
// worst-case propagation longer than the serve period is a warning.
func TestCheck_PropagationMaxIsMarginal(t *testing.T) {
	c := loadAfter(t)
	c.LoadBalancer.PropagationMax = time.Hour
	rep := Evaluate(c)
	if rep.Level != Marginal || !slices.Equal(rep.MarginalNames(), []string{"overlap"}) {
		t.Errorf("level %v, marginal %v; want overlap marginal only", rep.Level, rep.MarginalNames())
	}
}

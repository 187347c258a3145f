package nativecfg

import (
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/timing"
)

// TestApply_NativeRounding: a model edge becomes the nearest native value on
// the holding side, in the key's own unit, with its offset taken off.
func TestApply_NativeRounding(t *testing.T) {
	cases := []struct {
		name   string
		unit   Unit
		offset time.Duration
		h      timing.Break
		want   string
		up     bool
		ok     bool
	}{
		{"> whole seconds goes one up", Seconds, 0, timing.Break{Field: "drain.pre_stop", Op: timing.OpGreater, Value: "30s"}, "31", true, true},
		{">= a fraction rounds up", Seconds, 0, timing.Break{Field: "drain.pre_stop", Op: timing.OpGreaterEq, Value: "30.5s"}, "31", true, true},
		{">= whole stays", GoDuration, 0, timing.Break{Field: "drain.pre_stop", Op: timing.OpGreaterEq, Value: "30s"}, "30s", true, true},
		{"< whole goes one down", Seconds, 0, timing.Break{Field: "drain.pre_stop", Op: timing.OpLess, Value: "25s"}, "24", false, true},
		{"<= a fraction rounds down", Seconds, 0, timing.Break{Field: "drain.pre_stop", Op: timing.OpLessEq, Value: "24.5s"}, "24", false, true},
		{"milliseconds", Millis, 0, timing.Break{Field: "drain.pre_stop", Op: timing.OpGreater, Value: "1.5s"}, "1501", true, true},
		{"an offset is taken off", GoDuration, 5 * time.Second, timing.Break{Field: "drain.pre_stop", Op: timing.OpGreaterEq, Value: "25s"}, "20s", true, true},
		{"nothing below zero", Seconds, 0, timing.Break{Field: "drain.pre_stop", Op: timing.OpLess, Value: "0s"}, "", false, false},
		{"counts", Count, 0, timing.Break{Field: "load_balancer.health_check.unhealthy_threshold", Op: timing.OpLessEq, Value: "3"}, "3", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSubject(Kubernetes, "x", "f")
			s.Bind(tc.h.Field, Loc{File: "f", Path: "k"}, tc.unit).Offset = tc.offset
			c := s.Config
			ch, _, ok := s.apply(&c, tc.h)
			if ok != tc.ok || (ok && (ch.To != tc.want || ch.AtLeast != tc.up)) {
				t.Errorf("apply = %+v %v, want %q up %v ok %v", ch, ok, tc.want, tc.up, tc.ok)
			}
		})
	}
}

// TestJudge_FixFollowsWhatItBreaks is the example: a longer preStop
// needs a longer grace period too, and the preStop is the key to change
// first (readers list it before the deregistration delay).
func TestJudge_FixFollowsWhatItBreaks(t *testing.T) {
	s := NewSubject(Kubernetes, "Deployment web", "deployment.yaml")
	c := &s.Config
	c.LoadBalancer.Kind, c.LoadBalancer.TargetType = fleet.KindALB, fleet.TargetTypeIP
	c.LoadBalancer.PropagationMargin, c.LoadBalancer.DeregistrationDelay = 15*time.Second, 30*time.Second
	c.LoadBalancer.HealthCheck.Interval, c.LoadBalancer.HealthCheck.HealthyThreshold = 15*time.Second, 2
	c.Drain.PreStop, c.Drain.ShutdownTimeout, c.Backend.StopGracePeriod = 25*time.Second, 30*time.Second, 60*time.Second
	s.Bind("backend.stop_grace_period", Loc{File: "deployment.yaml", Line: 18, Path: "spec.template.spec.terminationGracePeriodSeconds"}, Seconds)
	s.Bind("drain.pre_stop", Loc{File: "deployment.yaml", Line: 23, Path: "spec.template.spec.containers[0].lifecycle.preStop.sleep.seconds"}, Seconds)
	s.Bind("drain.shutdown_timeout", Loc{File: "deployment.yaml", Line: 9, Path: "fact"}, GoDuration).Derived = true
	s.Bind("load_balancer.deregistration_delay", Loc{File: "ingress.yaml", Line: 7, Path: "deregistration_delay.timeout_seconds"}, Seconds)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	v := Judge(s)
	if v.Level != timing.Fail || len(v.Findings) != 1 {
		t.Fatalf("verdict %v findings %+v", v.Level, v.Findings)
	}
	f := v.Findings[0]
	if f.Loc.Line != 23 || f.Current != "25" || len(f.Fix) != 2 ||
		f.Fix[0].To != "31" || f.Fix[1].Loc.Line != 18 || f.Fix[1].To != "61" {
		t.Errorf("finding %+v", f)
	}
}

func TestWorstAndFails(t *testing.T) {
	cases := []struct {
		name   string
		levels []timing.Level
		strict bool
		worst  timing.Level
		fails  bool
	}{
		{"none", nil, true, timing.Pass, false},
		{"all pass", []timing.Level{timing.Pass, timing.Pass}, true, timing.Pass, false},
		{"marginal", []timing.Level{timing.Pass, timing.Marginal}, false, timing.Marginal, false},
		{"marginal under strict", []timing.Level{timing.Marginal, timing.Pass}, true, timing.Marginal, true},
		{"fail", []timing.Level{timing.Fail, timing.Marginal}, false, timing.Fail, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var vs []Verdict
			for _, l := range tc.levels {
				vs = append(vs, Verdict{Level: l})
			}
			w := Worst(vs)
			if w != tc.worst || Fails(w, tc.strict) != tc.fails {
				t.Errorf("Worst = %v, Fails = %v; want %v, %v", w, Fails(w, tc.strict), tc.worst, tc.fails)
			}
		})
	}
}

package timing

import (
	"testing"
	"time"
)

// TestCallTimeout covers issue 13's missing relation: an API call timeout
// shorter than the stop timeout it waits on.
func TestCallTimeout(t *testing.T) {
	cases := []struct {
		name        string
		call, stop  time.Duration
		want        Level
		wantSlack   time.Duration
		wantFormula string
	}{
		{"publish default over Fly's default", 45 * sec, 5 * sec, Pass, 40 * sec, "publish --call-timeout 45s > kill_timeout 5s"},
		{"equal gives up as the stop ends", 30 * sec, 30 * sec, Fail, 0, ""},
		{"a long kill_timeout outlasts the call", 45 * sec, 120 * sec, Fail, -75 * sec, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := CallTimeout("publish --call-timeout", tc.call, "kill_timeout", tc.stop)
			if r.Level != tc.want || r.Slack != tc.wantSlack || r.Name != CallTimeoutName {
				t.Errorf("got %v slack %v (%s), want %v slack %v", r.Level, r.Slack, r.Formula, tc.want, tc.wantSlack)
			}
			if tc.wantFormula != "" && r.Formula != tc.wantFormula {
				t.Errorf("formula %q, want %q", r.Formula, tc.wantFormula)
			}
			if tc.want == Fail && len(r.Notes) == 0 {
				t.Error("a failing relation says nothing")
			}
		})
	}
}

func TestWithin(t *testing.T) {
	r := Within("drain", "response_timeout", 60*sec, "drain_timeout", 30*sec, "cut")
	if r.Level != Fail || r.Slack != -30*sec || r.Formula != "response_timeout 60s ≤ drain_timeout 30s" || len(r.Notes) != 1 {
		t.Errorf("%+v", r)
	}
	if r := Within("drain", "a", 30*sec, "b", 30*sec, "cut"); r.Level != Pass || len(r.Notes) != 0 {
		t.Errorf("equal should hold: %+v", r)
	}
}

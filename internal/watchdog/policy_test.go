package watchdog

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

func TestPolicyFrom(t *testing.T) {
	p := PolicyFrom(fleet.Default().Watchdog)
	want := Policy{Interval: time.Minute, FailuresBeforeHeal: 4, CrashLoopAfter: 2, BackoffBase: 8 * time.Minute, BackoffMax: 64 * time.Minute}
	if p != want {
		t.Errorf("PolicyFrom(defaults) = %+v, want %+v", p, want)
	}
	scaled := PolicyFrom(fleet.Default().Scaled(0.01).Watchdog)
	if scaled.Interval != 600*time.Millisecond || scaled.BackoffBase != 4800*time.Millisecond {
		t.Errorf("scaled policy = %+v: the backoff must scale with W", scaled)
	}
}

func TestPolicy_Validate(t *testing.T) {
	ok := Policy{}.WithDefaults()
	tests := []struct {
		name   string
		change func(*Policy)
		field  string
	}{
		{"defaults are valid", func(*Policy) {}, ""},
		{"negative interval", func(p *Policy) { p.Interval = -time.Second }, "watchdog.interval"},
		{"zero failures", func(p *Policy) { p.FailuresBeforeHeal = -1 }, "watchdog.failures_before_heal"},
		{"crash loop threshold", func(p *Policy) { p.CrashLoopAfter = -1 }, "crash-loop"},
		{"backoff base", func(p *Policy) { p.BackoffBase = -1 }, "backoff base"},
		{"max below base", func(p *Policy) { p.BackoffMax = p.BackoffBase - 1 }, "backoff max"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			tc.change(&p)
			err := p.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("Validate = %v, want ErrInvalid naming %s", err, tc.field)
			}
		})
	}
}

func TestPolicy_Backoff(t *testing.T) {
	p := Policy{Interval: time.Minute, FailuresBeforeHeal: 4}.WithDefaults()
	tests := []struct {
		n    int
		want time.Duration
	}{
		{0, 0},
		{1, 0},                // a first heal: nothing beyond the K strikes
		{2, 8 * time.Minute},  // crash-looping: 2·K·W
		{3, 16 * time.Minute}, // doubling
		{4, 32 * time.Minute}, //
		{5, 64 * time.Minute}, // the cap, 16·K·W
		{6, 64 * time.Minute}, // stays at the cap
		{1000, 64 * time.Minute},
	}
	for _, tc := range tests {
		if got := p.Backoff(tc.n); got != tc.want {
			t.Errorf("Backoff(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

// The example fleets satisfy watchdog-patience, (K−1)·W ≥ drain.max, as
// `mythex check` demands (examples/seed/before.yml is the write-up's broken
// "before" and must not).
func TestExampleConfigs_WatchdogPatience(t *testing.T) {
	tests := []struct {
		file string
		want bool
	}{
		{"../../examples/local/mythex.yml", true},
		{"../../examples/seed/after.yml", true},
		{"../../examples/seed/before.yml", false},
	}
	for _, tc := range tests {
		cfg, err := fleet.Load(tc.file)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		for _, factor := range []float64{1, 0.01} {
			c := cfg.Config.Scaled(factor)
			p := PolicyFrom(c.Watchdog)
			patience := time.Duration(p.FailuresBeforeHeal-1) * p.Interval
			if got := patience >= c.Drain.Max; got != tc.want {
				t.Errorf("%s ×%v: (K−1)·W = %v against drain.max %v: holds %v, want %v", tc.file, factor, patience, c.Drain.Max, got, tc.want)
			}
		}
	}
}

func TestPolicy_Override(t *testing.T) {
	base := PolicyFrom(fleet.Watchdog{Interval: 30 * time.Second, FailuresBeforeHeal: 3})
	cases := []struct {
		name     string
		interval time.Duration
		k        int
		wantW    time.Duration
		wantK    int
	}{
		{"no flags", 0, 0, 30 * time.Second, 3},
		{"interval", 10 * time.Second, 0, 10 * time.Second, 3},
		{"failures", 0, 5, 30 * time.Second, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := base.Override(tc.interval, tc.k)
			if p.Interval != tc.wantW || p.FailuresBeforeHeal != tc.wantK || p.Validate() != nil {
				t.Errorf("Override = %+v, want W %s K %d, valid", p, tc.wantW, tc.wantK)
			}
		})
	}
}

package runtime

import (
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/definition"
)

var testHC = &definition.Healthcheck{
	Interval: 5 * time.Second, Timeout: 2 * time.Second, Retries: 3,
	StartPeriod: 10 * time.Second, StartInterval: time.Second,
}

func TestNextHealth(t *testing.T) {
	pass := CheckResult{OK: true, ExitCode: 200}
	fail := CheckResult{OK: false, ExitCode: 503}
	type step struct {
		r     CheckResult
		since time.Duration
	}
	cases := []struct {
		name       string
		steps      []step
		wantStatus HealthStatus
		wantStreak int
	}{
		{"first pass is healthy", []step{{pass, time.Second}}, HealthHealthy, 0},
		{"failures in start period do not count", []step{{fail, time.Second}, {fail, 2 * time.Second}, {fail, 3 * time.Second}, {fail, 4 * time.Second}}, HealthStarting, 0},
		{"failures after start period count", []step{{fail, 11 * time.Second}, {fail, 16 * time.Second}}, HealthStarting, 2},
		{"retries failures make unhealthy", []step{{fail, 11 * time.Second}, {fail, 16 * time.Second}, {fail, 21 * time.Second}}, HealthUnhealthy, 3},
		{"after a pass, start period no longer shields", []step{{pass, time.Second}, {fail, 2 * time.Second}, {fail, 3 * time.Second}, {fail, 4 * time.Second}}, HealthUnhealthy, 3},
		{"one failure while healthy stays healthy", []step{{pass, time.Second}, {fail, 20 * time.Second}}, HealthHealthy, 1},
		{"pass resets streak", []step{{pass, time.Second}, {fail, 20 * time.Second}, {fail, 25 * time.Second}, {pass, 30 * time.Second}}, HealthHealthy, 0},
		{"unhealthy recovers on a pass", []step{{fail, 11 * time.Second}, {fail, 16 * time.Second}, {fail, 21 * time.Second}, {pass, 26 * time.Second}}, HealthHealthy, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := InitialHealth(testHC)
			for _, s := range tc.steps {
				h = NextHealth(h, s.r, s.since, testHC)
			}
			if h.Status != tc.wantStatus || h.FailingStreak != tc.wantStreak {
				t.Errorf("health = %s streak %d, want %s streak %d", h.Status, h.FailingStreak, tc.wantStatus, tc.wantStreak)
			}
			if want := min(len(tc.steps), MaxHealthLog); len(h.Log) != want {
				t.Errorf("log holds %d results, want %d", len(h.Log), want)
			}
		})
	}
}

func TestNextHealth_LogKeepsLatest(t *testing.T) {
	h := InitialHealth(testHC)
	base := time.Unix(1000, 0)
	var prev Health
	for i := range 8 {
		prev = h
		h = NextHealth(h, CheckResult{OK: true, Start: base.Add(time.Duration(i) * time.Second)}, 0, testHC)
	}
	if len(h.Log) != MaxHealthLog {
		t.Fatalf("log = %d entries, want %d", len(h.Log), MaxHealthLog)
	}
	if got := h.Log[0].Start.Sub(base); got != 3*time.Second {
		t.Errorf("oldest kept = +%v, want +3s (the latest 5 of 8)", got)
	}
	if got := h.Log[MaxHealthLog-1].Start.Sub(base); got != 7*time.Second {
		t.Errorf("newest = +%v, want +7s", got)
	}
	if len(prev.Log) != MaxHealthLog || prev.Log[MaxHealthLog-1].Start.Sub(base) != 6*time.Second {
		t.Errorf("NextHealth modified its input's log")
	}
}

func TestNextCheckDelay(t *testing.T) {
	cases := []struct {
		name  string
		h     HealthStatus
		since time.Duration
		want  time.Duration
	}{
		{"starting in start period", HealthStarting, time.Second, time.Second},
		{"starting after start period", HealthStarting, 11 * time.Second, 5 * time.Second},
		{"healthy in start period", HealthHealthy, time.Second, 5 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NextCheckDelay(Health{Status: tc.h}, tc.since, testHC); got != tc.want {
				t.Errorf("delay = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInitialHealth(t *testing.T) {
	if got := InitialHealth(nil).Status; got != HealthNone {
		t.Errorf("no healthcheck: %s, want none", got)
	}
	if got := InitialHealth(testHC).Status; got != HealthStarting {
		t.Errorf("with healthcheck: %s, want starting", got)
	}
}

func TestOutputBuffer(t *testing.T) {
	var c OutputBuffer
	big := strings.Repeat("x", MaxCheckOutput+10)
	if n, err := c.Write([]byte(big)); n != len(big) || err != nil {
		t.Errorf("Write = %d, %v, want all taken", n, err)
	}
	if n, _ := c.Write([]byte("more")); n != 4 || c.Len() != MaxCheckOutput {
		t.Errorf("kept %d bytes, want %d", c.Len(), MaxCheckOutput)
	}
	if got := CapOutput(big); len(got) != MaxCheckOutput {
		t.Errorf("CapOutput kept %d bytes, want %d", len(got), MaxCheckOutput)
	}
}

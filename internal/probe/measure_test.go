package probe

import (
	"strings"
	"testing"
	"time"
)

func TestLateWarning(t *testing.T) {
	cases := []struct {
		name string
		r    Report
		want string
	}{
		{"no requests", Report{}, ""},
		{"one percent is tolerated", Report{Requests: 100, LateSends: 1}, ""},
		{"two percent warns", Report{Requests: 100, LateSends: 2}, "2.0% of sends left more than 1ms behind schedule"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := LateWarning(&tc.r, time.Millisecond)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("LateWarning = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestHeaderLine(t *testing.T) {
	cfg := Config{Method: "GET", URL: "http://x/", Rate: 50, Duration: 2 * time.Second, Timeout: time.Second, MaxInFlight: 76}
	if got, want := HeaderLine(cfg, nil, 0), "measuring GET http://x/ at 50 req/s for 2s (timeout 1s, max in flight 76)"; got != want {
		t.Errorf("without a command: %q, want %q", got, want)
	}
	if got := HeaderLine(cfg, []string{"mythex", "deploy"}, 3*time.Second); !strings.Contains(got, "while mythex deploy runs, then 3s") {
		t.Errorf("with a command: %q", got)
	}
}

package deploy

import (
	"testing"
	"time"

	"github.com/mythex/mythex/internal/lbport"
)

func TestHealthyWindow_See(t *testing.T) {
	in := lbport.Target{State: lbport.StateHealthy, InRotation: true}
	out := lbport.Target{State: lbport.StateUnhealthy, Reason: lbport.ReasonFailedHealthChecks}
	t0 := time.Unix(1000, 0)
	const window, healthy = 10 * time.Second, 5 * time.Second // deadline t0+15s
	type poll struct {
		at   time.Duration // since t0
		t    lbport.Target
		want windowStep
	}
	tests := []struct {
		name  string
		polls []poll
	}{
		{"in service a whole window", []poll{
			{2 * time.Second, in, windowStep{Verdict: windowWatch, Up: 2 * time.Second}},
			{10 * time.Second, in, windowStep{Verdict: windowDone, Up: 10 * time.Second}},
		}},
		{"a flap restarts the window", []poll{
			{2 * time.Second, in, windowStep{Verdict: windowWatch, Up: 2 * time.Second}},
			{4 * time.Second, out, windowStep{Verdict: windowWatch, Up: 4 * time.Second, Restarted: true}},
			{6 * time.Second, out, windowStep{Verdict: windowWatch, Up: 2 * time.Second}},
			{10 * time.Second, in, windowStep{Verdict: windowWatch, Up: 4 * time.Second}},
			{16 * time.Second, in, windowStep{Verdict: windowDone, Up: 10 * time.Second}},
		}},
		{"out at the deadline fails", []poll{
			{4 * time.Second, out, windowStep{Verdict: windowWatch, Up: 4 * time.Second, Restarted: true}},
			{15 * time.Second, out, windowStep{Verdict: windowFail, Up: 11 * time.Second}},
		}},
		{"in at the deadline goes on to a whole window", []poll{
			{14 * time.Second, out, windowStep{Verdict: windowWatch, Up: 14 * time.Second, Restarted: true}},
			{16 * time.Second, in, windowStep{Verdict: windowWatch, Up: 2 * time.Second}},
			{24 * time.Second, in, windowStep{Verdict: windowDone, Up: 10 * time.Second}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newHealthyWindow(t0, window, healthy)
			for i, p := range tc.polls {
				if got := w.see(t0.Add(p.at), p.t); got != p.want {
					t.Fatalf("poll %d at +%v (%s): %+v, want %+v", i+1, p.at, lbport.Describe(p.t), got, p.want)
				}
			}
		})
	}
}

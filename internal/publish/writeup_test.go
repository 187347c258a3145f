package publish

import (
	"fmt"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/platform"
)

// slidingMachine is the write-up's simulated platform: a machine whose every
// look adds one crash and one start and trims the list to capacity events,
// newest first. Before the publish it slept and woke a few times, so its list
// is already full of older events — the real conditions the bug needed.
type slidingMachine struct {
	capacity int
	events   []platform.Event // newest first
	restarts int
}

func newSlidingMachine(capacity int) *slidingMachine {
	s := &slidingMachine{capacity: capacity}
	// History before the publish: launch, then sleeps (requested stops) and wakes.
	for _, e := range []platform.Event{launch(-600), start(-599.9), requestedStop(-500), start(-300), requestedStop(-200), start(-100),
		requestedStop(-50), {Type: platform.EventUpdate, Timestamp: at(0.05)}, start(0.1)} {
		s.events = append([]platform.Event{e}, s.events...)
	}
	s.events = platform.TrimEvents(s.events, capacity)
	return s
}

// look returns the machine as the platform shows it at secs, after one more
// crash and start.
func (s *slidingMachine) look(secs float64) platform.Machine {
	s.restarts++
	s.events = append([]platform.Event{start(secs - 0.3), crash(secs-0.4, 1, s.restarts)}, s.events...)
	s.events = platform.TrimEvents(s.events, s.capacity)
	m := mach(platform.StateStarted, platform.RestartAlways, append([]platform.Event(nil), s.events...)...)
	return m
}

// countingCheck is the health check that failed in production: look 2 counts
// the crashes since t0 in the list; if any, look 3 counts again and fails only
// when the count grew. Kept here only to show the simulation reproduces the
// bug.
func countingCheck(look2, look3 platform.Machine) Status {
	n2 := len(crashesSince(look2.Events, t0, platform.RestartAlways))
	if n2 == 0 {
		return StatusLive
	}
	n3 := len(crashesSince(look3.Events, t0, platform.RestartAlways))
	if n3 > n2 {
		return StatusFailed
	}
	return StatusLive
}

func TestJudge_WriteUpSimulation(t *testing.T) {
	t.Parallel() // its own simulated machines
	tests := []struct {
		capacity int
		// counting is what the count-based check concludes: it passes as soon
		// as the list is full and slides.
		counting Status
	}{
		{capacity: 1, counting: StatusLive},
		{capacity: 3, counting: StatusLive},
		{capacity: 5, counting: StatusLive},
		{capacity: 10, counting: StatusFailed},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d events kept", tt.capacity), func(t *testing.T) {
			s := newSlidingMachine(tt.capacity)
			pol := Policy{StableFor: 10 * time.Second, LookInterval: 5 * time.Second}
			var ms []platform.Machine
			for n := 1; n <= 3; n++ {
				ms = append(ms, s.look(float64(n)*5))
			}
			var looks []Look
			var v Verdict
			for n := 1; n <= 3; n++ {
				secs := float64(n) * 5
				looks = append(looks, lookAt(n, secs, ms[n-1], okProbe))
				v = Judge(Input{Start: t0, Now: at(secs), Deadline: at(120), Image: "app:v2", Machines: []string{"m1"}, Looks: looks, Policy: pol})
				if v.Status != StatusPending {
					break
				}
			}
			if v.Status != StatusFailed {
				t.Fatalf("Judge after %d looks = %v, want failed", v.Looks, v)
			}
			if v.Looks > 3 {
				t.Errorf("failed after %d looks, want within 3", v.Looks)
			}
			if got := countingCheck(ms[1], ms[2]); got != tt.counting {
				t.Errorf("counting check = %s, want %s (the write-up's bug)", got, tt.counting)
			}
		})
	}
}

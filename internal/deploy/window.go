package deploy

import (
	"time"

	"github.com/mythex/mythex/internal/lbport"
)

// healthyWindow is the load balancer's side of the look twice, as Nomad's
// min_healthy_time within its healthy_deadline: the target must be healthy
// and in rotation at every poll for a whole window. A poll that finds it
// otherwise (a slow check on a busy host) starts the window again; one that
// finds it otherwise after the deadline fails the look.
type healthyWindow struct {
	// window is deploy.min_healthy_time.
	window time.Duration
	// start is when the look began; deadline is the last moment a poll may
	// find the target out of service without failing the look.
	start, deadline time.Time
	// begin is when the current window began.
	begin time.Time
	// wasIn: the last poll found the target in service (true before the
	// first, so the first poll that finds it out says so).
	wasIn bool
}

func newHealthyWindow(start time.Time, window, healthy time.Duration) *healthyWindow {
	return &healthyWindow{window: window, start: start, deadline: start.Add(window + healthy), begin: start, wasIn: true}
}

// windowVerdict is what one poll decides.
type windowVerdict int

const (
	// windowWatch: keep polling.
	windowWatch windowVerdict = iota
	// windowDone: the target was in service at every poll for a whole window.
	windowDone
	// windowFail: out of service past the deadline.
	windowFail
)

// windowStep is the decision on one poll.
type windowStep struct {
	Verdict windowVerdict
	// Up is how long the target has been in service in the current window
	// (before a restart: how long it had been).
	Up time.Duration
	// Restarted: this poll found the target out of service after one that
	// found it in: the window starts again once it is back.
	Restarted bool
}

// see decides on what a poll at now reported.
func (w *healthyWindow) see(now time.Time, t lbport.Target) windowStep {
	up := now.Sub(w.begin)
	if !lbport.InService(t) {
		if !now.Before(w.deadline) {
			return windowStep{Verdict: windowFail, Up: up}
		}
		step := windowStep{Verdict: windowWatch, Up: up, Restarted: w.wasIn}
		w.begin, w.wasIn = now, false
		return step
	}
	w.wasIn = true
	if up >= w.window {
		return windowStep{Verdict: windowDone, Up: up}
	}
	return windowStep{Verdict: windowWatch, Up: up}
}

// limit bounds the whole look at the load balancer when polls come every
// interval: the latest a window begun just before the deadline ends, plus
// a poll. Only an LB that stops answering reaches it.
func (w *healthyWindow) limit(interval time.Duration) time.Duration {
	return w.deadline.Sub(w.start) + w.window + 2*interval
}

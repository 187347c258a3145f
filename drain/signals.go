package drain

import (
	"fmt"
	"os"
	"os/signal"
	"time"
)

// signalAction is what a received signal makes the server do.
type signalAction int

const (
	actStartDrain   signalAction = iota // first signal: start the drain
	actSkipServe                        // second: end the serve period now
	actStopNow                          // third and later: cut the shutdown
	actIgnoreRepeat                     // repeated, but IgnoreRepeatedSignals
)

func (a signalAction) String() string {
	switch a {
	case actStartDrain:
		return "start drain"
	case actSkipServe:
		return "skip the rest of the serve period"
	case actStopNow:
		return "stop now"
	case actIgnoreRepeat:
		return "ignore"
	}
	return fmt.Sprintf("signalAction(%d)", int(a))
}

// decideSignal is the signal policy: what the n-th signal (n ≥ 1) received
// during Serve does. Signals are counted whatever started the drain, so a drain
// started by Drain is not cut short by the supervisor's first SIGTERM.
func decideSignal(n int, ignoreRepeated bool) signalAction {
	switch {
	case n <= 1:
		return actStartDrain
	case ignoreRepeated:
		return actIgnoreRepeat
	case n == 2:
		return actSkipServe
	default:
		return actStopNow
	}
}

// notifySignals is the real subscription: os/signal delivery of sigs.
func notifySignals(sigs []os.Signal) (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, sigs...)
	return ch, func() { signal.Stop(ch) }
}

// watchSignals starts the goroutine that applies the signal policy and returns
// the function that stops it and waits for it to end. With NoSignals it does
// nothing.
func (s *Server) watchSignals() (stop func()) {
	if s.cfg.NoSignals {
		return func() {}
	}
	ch, unsubscribe := s.subscribe(s.cfg.Signals)
	quit := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer func() {
			if p := recover(); p != nil {
				s.cfg.Logger.Error("drain: panic in the signal watcher; signals are no longer handled", "panic", p)
			}
		}()
		n := 0
		for {
			select {
			case <-quit:
				return
			case sig := <-ch:
				n++
				s.apply(decideSignal(n, s.cfg.IgnoreRepeatedSignals), sig, n)
			}
		}
	}()
	return func() {
		unsubscribe()
		close(quit)
		<-ended
	}
}

// apply carries out the action chosen for the n-th signal sig.
func (s *Server) apply(a signalAction, sig os.Signal, n int) {
	log := s.cfg.Logger.With("signal", sig.String(), "signal_count", n)
	switch a {
	case actStartDrain:
		if s.Draining() {
			log.Info("drain: signal received while already draining; the drain goes on")
			return
		}
		s.begin("signal " + sig.String())
	case actSkipServe:
		left := s.cfg.ServePeriod - time.Since(s.drainStart)
		if left > 0 {
			log.Warn("drain: repeated signal; skipping the rest of the serve period and shutting down now (a third signal stops at once)",
				"skipped", left.Round(time.Millisecond), "shutdown_timeout", s.cfg.ShutdownTimeout)
		} else {
			log.Warn("drain: repeated signal; the serve period is already over (a third signal stops at once)")
		}
		s.skipServePeriod()
	case actStopNow:
		log.Warn("drain: repeated signal; stopping now and closing every connection")
		s.skipServePeriod()
		s.stop()
	case actIgnoreRepeat:
		log.Info("drain: repeated signal ignored (IgnoreRepeatedSignals); the drain runs its full course")
	}
}

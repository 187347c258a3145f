package probe

import (
	"context"
	"runtime"
	"time"

	"github.com/jonboulle/clockwork"
)

// PreciseWindow is how much of each wait of the scheduler is slept with a
// precise sleep (nanosleep on Linux) rather than a Go timer, when the
// prober runs on the real clock. Go's runtime waits for timers in epoll with
// millisecond resolution when it has nothing else to do, so a 200 µs timer
// can fire a millisecond late; measured on a 2-core machine at 2,000 req/s,
// timers alone left 15–20 % of sends more than 1 ms late, the precise sleep
// under 1–2 %. Waits longer than the window sleep on a timer first (so Stop
// and context cancellation interrupt them) and the window precisely; the
// scheduler can ignore Stop for at most this long.
const PreciseWindow = 2 * time.Millisecond

// waiter is how the scheduler waits for the next due time. One per run,
// used only by the scheduler goroutine.
type waiter struct {
	clock   clockwork.Clock
	precise bool
	ctx     context.Context
	stop    <-chan struct{}
	timer   clockwork.Timer // made at the first timer wait
}

// newWaiter returns the scheduler's waiter. With precise sleeps it locks the
// scheduler goroutine to its OS thread, so sleeping in a system call parks a
// thread of its own.
func (p *Prober) newWaiter(ctx context.Context) *waiter {
	w := &waiter{clock: p.clock, precise: p.precise, ctx: ctx, stop: p.stopCh}
	if w.precise {
		runtime.LockOSThread()
	}
	return w
}

func (w *waiter) close() {
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.precise {
		runtime.UnlockOSThread()
	}
}

// stopped reports, without blocking, whether Stop was called or ctx ended.
func (w *waiter) stopped() bool {
	select {
	case <-w.stop:
		return true
	case <-w.ctx.Done():
		return true
	default:
		return false
	}
}

// until waits until t on the waiter's clock. It returns false, early, when
// Stop is called or the context ends.
func (w *waiter) until(t time.Time) bool {
	for {
		if w.stopped() {
			return false
		}
		wait := t.Sub(w.clock.Now())
		switch {
		case wait <= 0:
			return true
		case w.precise && wait <= PreciseWindow:
			sleepPrecisely(wait)
			continue
		case w.precise:
			wait -= PreciseWindow
		}
		if w.timer == nil {
			w.timer = w.clock.NewTimer(wait)
		} else {
			w.timer.Reset(wait)
		}
		select {
		case <-w.timer.Chan():
		case <-w.stop:
			return false
		case <-w.ctx.Done():
			return false
		}
	}
}

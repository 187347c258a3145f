package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// Drive runs fn in a goroutine under a context that ends after timeout (of
// real time) and, until fn returns, drives clock for it: it waits until
// something waits on the clock, calls between (if not nil) and advances the
// clock by step, again and again. The code under test thus sees its timers
// fire as fast as it can take them, in order. Drive fails t (Fatal) when
// the context ends while fn still runs and nothing waits on the clock — a
// simulation stuck on something other than time. Call it from the test's
// goroutine.
func Drive(t testing.TB, clock *clockwork.FakeClock, timeout, step time.Duration, between func(), fn func(ctx context.Context)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	for {
		// Wait for a waiter on the clock, or for fn to end.
		bctx, bcancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-done:
				bcancel()
			case <-bctx.Done():
			}
		}()
		err := clock.BlockUntilContext(bctx, 1)
		bcancel()
		select {
		case <-done:
			return
		default:
		}
		if err != nil {
			t.Fatalf("simulation stuck: nothing waits on the clock and fn has not returned: %v", err)
		}
		if between != nil {
			between()
		}
		clock.Advance(step)
	}
}

package testkit

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestSyncBuffer_ConcurrentWriters(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "%d\n", i)
			}
		})
	}
	wg.Wait()
	if got := len(b.String()); got != 8*100*2 {
		t.Errorf("%d bytes written, want %d", got, 8*100*2)
	}
	if c := b.Bytes(); len(c) != len(b.String()) {
		t.Errorf("Bytes has %d bytes, String %d", len(c), len(b.String()))
	}
}

// TestDrive_AdvancesUntilFnReturns: fn's sleeps of the fake clock end one
// step at a time, between runs before each step, and Drive returns once fn
// has.
func TestDrive_AdvancesUntilFnReturns(t *testing.T) {
	clock := clockwork.NewFakeClock()
	start := clock.Now()
	steps := 0
	var slept time.Duration
	Drive(t, clock, 10*time.Second, 100*time.Millisecond, func() { steps++ }, func(ctx context.Context) {
		for range 3 {
			select {
			case <-clock.After(250 * time.Millisecond):
			case <-ctx.Done():
				return
			}
		}
		slept = clock.Since(start)
	})
	if slept < 750*time.Millisecond || steps < 8 {
		t.Errorf("fn slept %s of the fake clock in %d steps, want at least 750ms in at least 8", slept, steps)
	}
}

// fatalTB records Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestDrive_FailsWhenStuck: fn waits on something other than the clock;
// Drive fails the test once its timeout ends, naming the stuck simulation.
func TestDrive_FailsWhenStuck(t *testing.T) {
	tb := &fatalTB{TB: t}
	unblock := make(chan struct{})
	defer close(unblock)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Drive(tb, clockwork.NewFakeClock(), 100*time.Millisecond, time.Second, nil, func(context.Context) { <-unblock })
	}()
	<-done
	if tb.msg == "" {
		t.Fatal("Drive returned although fn never did")
	}
}

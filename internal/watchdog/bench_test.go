package watchdog

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/hostlock"
)

// cpuTime is the process's user+system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchRound measures whole rounds — host lock (flock and its holder file),
// the definition read back from the store (file, hash check, decode), the
// runtime's status, Decide per service, records, metrics — and reports the
// CPU time per service per round (target: < 1ms).
func benchRound(b *testing.B, w *Watchdog, services int) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for b.Loop() {
		if r := w.runOnce(ctx); r.Result != RoundChecked {
			b.Fatalf("round %s: %s", r.Result, r.Detail)
		}
	}
	cpu := cpuTime(b) - cpu0
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/float64(services), "cpu-µs/service")
}

// BenchmarkWatchdog_runOnce: the write-up's four services, all healthy, on
// the in-memory runtime (the runtime's own Status cost is not the
// watchdog's; see BenchmarkWatchdog_runOnce_Process for the real one).
func BenchmarkWatchdog_runOnce(b *testing.B) {
	for _, n := range []int{4, 32} {
		b.Run(map[int]string{4: "4-services", 32: "32-services"}[n], func(b *testing.B) {
			dir := b.TempDir()
			clock := clockwork.NewFakeClockAt(t0)
			names := theFour
			if n != len(theFour) {
				names = nil
				for i := range n {
					names = append(names, "svc-"+string(rune('a'+i%26))+string(rune('a'+i/26)))
				}
			}
			d := newDefinition(b, "v2", names...)
			store, err := definition.OpenStore(filepath.Join(dir, "definitions"))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := store.Publish(d); err != nil {
				b.Fatal(err)
			}
			rt := newFakeRuntime(clock)
			rt.runAll(d)
			w, err := New(Config{Definitions: store, Runtime: rt, Lock: hostlock.New(dir), StateDir: dir, Clock: clock})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			benchRound(b, w, n)
		})
	}
}

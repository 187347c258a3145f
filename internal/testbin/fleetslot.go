package testbin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/flocks"
)

// FleetSlotsEnv names the environment variable that sets how many fleets
// the test processes of one checkout run at once (FleetSlot); unset, it is
// DefaultFleetSlots.
const FleetSlotsEnv = "MYTHEX_TEST_FLEETS"

// DefaultFleetSlots is how many end-to-end fleets run at once across every
// test process of a checkout: two per CPU and one more (5 on two cores).
//
// An end-to-end test's fleet — an LB, agents, a few services a host, a
// prober — spends its time waiting on its timings (health checks, drains,
// look-twice windows), so the packages that hold them run many such tests at
// once (SetParallel). But `go test ./...` runs two such packages side by side
// on two cores, and fleets starved of CPU fail their 400 ms health checks and
// outlive their scaled lease TTLs (measured: sixteen at once failed; five
// never did). The count is checkout-wide, not per package, so it holds
// whichever packages the go command runs together.
func DefaultFleetSlots() int { return 2*runtime.NumCPU() + 1 }

// fleetSlotPoll is how often FleetSlot looks whether a slot is free.
const fleetSlotPoll = 50 * time.Millisecond

// FleetSlot takes one of the checkout's fleet slots (FleetSlotsEnv, else
// DefaultFleetSlots) and holds it until t ends. Call it at the top of every
// test that starts its own fleet, after t.Parallel and before the fleet
// starts — in the test that owns the fleet, not in a parent whose parallel
// subtests take slots of their own (the parent holds its slot until they all
// end). Take an Exclusive lock before the slot, never after: a slot's holder
// then never waits for a lock, so no two tests can each hold what the other
// waits for.
//
// The slots are flocks (mythex's one lock type; the holder file names the
// test): the kernel frees the slot of a test process that dies. A slot that
// cannot be opened fails t; an unparsable FleetSlotsEnv fails t naming it.
func FleetSlot(t testing.TB) {
	t.Helper()
	n, err := fleetSlots(os.Getenv(FleetSlotsEnv))
	if err != nil {
		t.Fatal(err)
	}
	dir, _, err := sharedDir()
	if err != nil {
		t.Fatal(err)
	}
	l, err := takeSlot(dir, n, t.Name(), fleetSlotPoll)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Unlock() })
}

// fleetSlots parses FleetSlotsEnv's value; empty is DefaultFleetSlots.
func fleetSlots(v string) (int, error) {
	if v == "" {
		return DefaultFleetSlots(), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a whole number of fleets, 1 or more", FleetSlotsEnv, v)
	}
	return n, nil
}

// takeSlot takes the first free of the n slot locks in dir for holder,
// waiting (polling every poll) while all are held.
func takeSlot(dir string, n int, holder string, poll time.Duration) (*flocks.Lock, error) {
	for {
		for i := range n {
			l := flocks.New(filepath.Join(dir, fmt.Sprintf("fleet-slot-%d.lock", i)), "test fleet slot "+strconv.Itoa(i))
			err := l.TryLock(holder)
			if err == nil {
				return l, nil
			}
			if !errors.Is(err, flocks.ErrHeld) {
				return nil, err
			}
		}
		time.Sleep(poll) // waiting on other processes' locks: nothing to select on
	}
}

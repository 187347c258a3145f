package testbin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/flocks"
)

// FleetSlotsEnv names the environment variable that sets how many fleets
// the test processes of one checkout may run at once (FleetSlot); unset, it
// is DefaultFleetSlots.
const FleetSlotsEnv = "MYTHEX_TEST_FLEETS"

// DefaultFleetSlots is the most end-to-end fleets that run at once across
// every test process of a checkout: three per CPU (6 on two cores). Past the
// first one per CPU, a fleet starts only while the machine has CPU to spare
// (see FleetSlot), so the count only caps what the admission lets in. A
// fleet with its load (an LB and prober in the test process, built with
// -race, its agents and services) used 0.12 of a CPU over its life in a full
// run on two cores (process accounting: 66 CPU-s over 539 fleet-seconds),
// more while it starts and deploys; but its timings are waits — health
// checks, drains, look-twice windows — so four fleets at once left the CPUs
// 15–60 % idle for the two minutes the fleets ran. Without the admission,
// seven fleets of two test processes started at once in a cold run, beside
// go test's compiles, and a fleet's 400 ms health checks timed out.
func DefaultFleetSlots() int { return 3 * runtime.NumCPU() }

// fleetSlotPoll is how often FleetSlot looks whether a slot is free.
const fleetSlotPoll = 50 * time.Millisecond

// FleetSlot takes one of the checkout's fleet slots and holds it until t
// ends. Call it at the top of every test that starts its own fleet, after
// t.Parallel and before the fleet starts — in the test that owns the fleet,
// not in a parent whose parallel subtests take slots of their own (the parent
// holds its slot until they all end). Take an Exclusive lock before the slot,
// never after: a slot's holder then never waits for a lock, so no two tests
// can each hold what the other waits for.
//
// Why: an end-to-end test's fleet — an LB, agents, a few services a host, a
// prober — spends its time waiting on its timings (health checks, drains,
// look-twice windows), so the packages that hold them run many such tests at
// once (SetParallel). But a fleet starved of CPU fails its 400 ms health
// checks and outlives its scaled lease TTL (measured on two cores: sixteen
// fleets at once failed), and `go test ./...` runs other test binaries and
// links beside them. So there are at most FleetSlotsEnv (else
// DefaultFleetSlots) slots; one per CPU is always given when free, and each
// slot past those only while, over the last five seconds, the CPUs were at
// least 20 % idle and runnable tasks waited for a CPU at most half the time
// (Linux's /proc/stat and /proc/pressure/cpu; elsewhere the count alone
// bounds it), at most one such start every five seconds per test process (a
// fleet takes about that long to start its processes), so fleets starting
// at once do not take the same spare CPU twice.
//
// The slots are flocks (mythex's one lock type; the holder file names the
// test): the kernel frees the slot of a test process that dies. A slot that
// cannot be opened fails t; an unparsable FleetSlotsEnv fails t naming it.
func FleetSlot(t testing.TB) {
	t.Helper()
	fleetSlot(t, false)
}

// FleetSlotFirst is FleetSlot for the tests that should not wait behind the
// others: while one of them waits, the FleetSlot callers of every test
// process of the checkout wait behind it. Two kinds: the longest fleets (20 s
// and more), because a package ends with its last fleet, and one that starts
// last stretches it by its own length while the CPUs idle beside it (longest
// first packs the slots: in a full run the last long fleet started with four
// short ones done beside it); and the few fleets of a package whose other
// tests are short, because go test runs two packages' binaries at a time,
// and one that waits for a slot holds one of those two idle.
func FleetSlotFirst(t testing.TB) {
	t.Helper()
	fleetSlot(t, true)
}

func fleetSlot(t testing.TB, first bool) {
	t.Helper()
	n, err := fleetSlots(os.Getenv(FleetSlotsEnv))
	if err != nil {
		t.Fatal(err)
	}
	dir, _, err := sharedDir()
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	l, err := takeSlot(dir, n, t.Name(), fleetSlotPoll, processAdmission(), first)
	if err != nil {
		t.Fatal(err)
	}
	// The test's own time is its elapsed time less this wait.
	t.Logf("fleet slot: %s after waiting %v", filepath.Base(l.Path()), time.Since(begin).Round(10*time.Millisecond))
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
// waiting (polling every poll) while all are held; slots from adm.floor on
// are tried only when adm admits one more fleet now. One caller per process
// polls at a time (pollMu), the others queue behind it: a process with
// twenty waiting tests gets a freed slot no more often than one with one.
// A first caller goes ahead of the others, of every test process of the
// checkout, this one included: while one waits (firstwait.go's marker), the
// others stand back, handing pollMu over between their polls.
func takeSlot(dir string, n int, holder string, poll time.Duration, adm *admission, first bool) (*flocks.Lock, error) {
	if first {
		unmark, err := markFirstWaiting(dir)
		if err != nil {
			return nil, err
		}
		defer unmark()
	}
	pollMu.Lock()
	defer pollMu.Unlock()
	for {
		if !first && firstWaiterAnywhere(dir) {
			stoodBack.Add(1)
			pollMu.Unlock()
			time.Sleep(poll) // a first caller polls meanwhile
			pollMu.Lock()
			continue
		}
		for i := range n {
			spare := i >= adm.floor
			if spare && !adm.mayStart() {
				break
			}
			l := flocks.New(filepath.Join(dir, fmt.Sprintf("fleet-slot-%d.lock", i)), "test fleet slot "+strconv.Itoa(i))
			err := l.TryLock(holder)
			if err == nil {
				if spare {
					adm.started()
				}
				return l, nil
			}
			if !errors.Is(err, flocks.ErrHeld) {
				return nil, err
			}
		}
		time.Sleep(poll) // waiting on other processes' locks and the CPU: nothing to select on
	}
}

var (
	// pollMu lets one takeSlot of this process poll at a time.
	pollMu sync.Mutex
	// stoodBack counts the polls other callers left to a first one (tests
	// wait on it).
	stoodBack atomic.Int64
)

// admission decides whether one more fleet than floor may start now: when,
// over the sampler's window, the CPUs were at least minIdle idle and tasks
// waited for a CPU at most maxPressure of the time, and no such start of this
// process came within cooldown. A CPU that cannot be read (not Linux) admits:
// the count alone bounds the fleets; readings that do not span the window yet
// do not.
type admission struct {
	floor       int
	minIdle     float64
	maxPressure float64
	cooldown    time.Duration
	load        func() (l cpuLoad, ready, known bool)
	now         func() time.Time

	mu   sync.Mutex
	last time.Time
}

func (a *admission) mayStart() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	// Read the load even in the cooldown: the window fills meanwhile.
	l, ready, known := a.load()
	if !a.last.IsZero() && a.now().Sub(a.last) < a.cooldown {
		return false
	}
	switch {
	case !known:
		return true
	case !ready:
		return false
	}
	return l.idle >= a.minIdle && (!l.pressureKnown || l.pressure <= a.maxPressure)
}

func (a *admission) started() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last = a.now()
}

var (
	admissionOnce sync.Once
	theAdmission  *admission
)

// The admission of spare fleets (FleetSlot): measured on two cores, fleets
// passed with the CPUs ~15 % idle and tasks waiting ~50 % of the time, and
// failed when the wait went to ~100 % for twenty seconds — five fleets
// admitted within ten seconds on one-second glimpses of idle CPU between
// go test's compiles. A fleet takes about five seconds to start. At 35 %
// idle the suite ran two fleets for a minute while the CPUs were 25–30 %
// idle and tasks waited 35–40 % of the time, a fleet or two of room; the
// count (DefaultFleetSlots) bounds the fleets as before.
const (
	spareWindow      = 5 * time.Second
	spareMinIdle     = 0.2
	spareMaxPressure = 0.5
	spareCooldown    = 5 * time.Second
)

// processAdmission is this test process's admission: one fleet per CPU
// always, more on the spare* terms.
func processAdmission() *admission {
	admissionOnce.Do(func() {
		s := &cpuSampler{read: readCPU, now: time.Now, window: spareWindow}
		theAdmission = &admission{floor: runtime.NumCPU(), minIdle: spareMinIdle, maxPressure: spareMaxPressure,
			cooldown: spareCooldown, load: s.load, now: time.Now}
	})
	return theAdmission
}

package testbin

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/flocks"
)

func TestFleetSlots(t *testing.T) {
	tests := []struct {
		name, v string
		want    int
		wantErr bool
	}{
		{"unset is the default", "", DefaultFleetSlots(), false},
		{"a count", "3", 3, false},
		{"zero", "0", 0, true},
		{"negative", "-2", 0, true},
		{"not a number", "many", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fleetSlots(tc.v)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("fleetSlots(%q) = %d, %v; want %d, error %v", tc.v, got, err, tc.want, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), FleetSlotsEnv) {
				t.Errorf("error %q does not name %s", err, FleetSlotsEnv)
			}
		})
	}
}

// always admits every slot: only the count bounds the fleets.
var always = &admission{floor: 1 << 30}

// takeInBackground takes a slot as holder on a goroutine and sends, once it
// has it, the slot's path (or the error), then gives the slot back.
func takeInBackground(dir string, n int, holder string, adm *admission, first bool, got chan<- string) {
	go func() {
		l, err := takeSlot(dir, n, holder, time.Millisecond, adm, first)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- holder + " " + l.Path()
		_ = l.Unlock()
	}()
}

// waitStoodBack waits until a plain taker has stood back for a first one
// since stoodBack read before: from then on it does not try a slot while
// that first one waits.
func waitStoodBack(t *testing.T, before int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); stoodBack.Load() == before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the plain taker never stood back for the first one")
		}
	}
}

// TestTakeSlot: with every slot held, a taker waits, and it gets the slot
// that is given back — the only one it could have taken.
func TestTakeSlot(t *testing.T) {
	dir := t.TempDir()
	a, err := takeSlot(dir, 2, "a", time.Millisecond, always, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := takeSlot(dir, 2, "b", time.Millisecond, always, false)
	if err != nil {
		t.Fatal(err)
	}
	if a.Path() == b.Path() {
		t.Fatalf("two holders of one slot: %s", a.Path())
	}
	got := make(chan string, 1)
	takeInBackground(dir, 2, "c", always, false, got)
	freed := "c " + b.Path()
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
	if p := <-got; p != freed {
		t.Fatalf("the waiting taker got %q, want the freed slot %q", p, freed)
	}
	_ = a.Unlock()
}

// TestTakeSlot_FirstGoesAhead: with the one slot held and a taker waiting,
// a first taker that comes later gets the slot when it is given back, and
// the earlier taker gets it only after that.
func TestTakeSlot_FirstGoesAhead(t *testing.T) {
	dir := t.TempDir()
	a, err := takeSlot(dir, 1, "a", time.Millisecond, always, false)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	takeInBackground(dir, 1, "plain", always, false, order)
	// Wait until the plain taker polls (holds pollMu), then start the first.
	for deadline := time.Now().Add(10 * time.Second); pollMu.TryLock(); time.Sleep(time.Millisecond) {
		pollMu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the plain taker never started polling")
		}
	}
	before := stoodBack.Load()
	takeInBackground(dir, 1, "first", always, true, order)
	waitStoodBack(t, before)
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	slot := " " + a.Path()
	if got := []string{<-order, <-order}; got[0] != "first"+slot || got[1] != "plain"+slot {
		t.Fatalf("slots went to %v, want [first plain]", got)
	}
}

// TestTakeSlot_UnwritableDir: a slot that cannot be opened is an error, not
// a wait.
func TestTakeSlot_UnwritableDir(t *testing.T) {
	if _, err := takeSlot("/nonexistent/dir", 1, "x", time.Millisecond, always, false); err == nil {
		t.Fatal("takeSlot in a missing directory succeeded")
	}
}

// TestTakeSlot_SpareSlotsNeedIdleCPU: past the floor a free slot is taken
// only when the CPU is idle enough; below it, whatever the CPU.
func TestTakeSlot_SpareSlotsNeedIdleCPU(t *testing.T) {
	dir := t.TempDir()
	asked := make(chan struct{}) // closed when a taker first asks about the CPU
	var once sync.Once
	adm := &admission{floor: 1, minIdle: 0.35, maxPressure: 0.5, now: time.Now, load: func() (cpuLoad, bool, bool) {
		once.Do(func() { close(asked) })
		return cpuLoad{idle: 0.1}, true, true // busy
	}}
	first, err := takeSlot(dir, 3, "first", time.Millisecond, adm, false)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	takeInBackground(dir, 3, "second", adm, false, got)
	select {
	case p := <-got:
		t.Fatalf("with the CPU busy and the floor's slot held, the taker got %q", p)
	case <-asked: // it found the floor's slot held and the CPU busy
	}
	// When the floor's slot is given back it takes that one.
	freed := "second " + first.Path()
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	if p := <-got; p != freed {
		t.Fatalf("the taker got %q, want the floor's slot %q", p, freed)
	}
}

func TestAdmission(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		load       cpuLoad
		ready      bool
		known      bool
		lastStart  time.Duration // before now; 0 for never
		wantMayRun bool
	}{
		{"idle enough, none started yet", cpuLoad{idle: 0.5}, true, true, 0, true},
		{"busy", cpuLoad{idle: 0.2}, true, true, 0, false},
		{"at the idle threshold", cpuLoad{idle: 0.35}, true, true, 0, true},
		{"idle enough but one started 500ms ago", cpuLoad{idle: 0.9}, true, true, 500 * time.Millisecond, false},
		{"idle enough, the last start past the cooldown", cpuLoad{idle: 0.9}, true, true, 5 * time.Second, true},
		{"idle enough, little waiting", cpuLoad{idle: 0.5, pressure: 0.2, pressureKnown: true}, true, true, 0, true},
		{"at the pressure threshold", cpuLoad{idle: 0.5, pressure: 0.5, pressureKnown: true}, true, true, 0, true},
		{"idle on average but tasks waited most of the time", cpuLoad{idle: 0.5, pressure: 0.8, pressureKnown: true}, true, true, 0, false},
		{"readings do not span the window yet", cpuLoad{}, false, true, 0, false},
		{"unknown CPU: the count alone bounds", cpuLoad{}, false, false, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &admission{floor: 1, minIdle: 0.35, maxPressure: 0.5, cooldown: 5 * time.Second,
				load: func() (cpuLoad, bool, bool) { return tc.load, tc.ready, tc.known },
				now:  func() time.Time { return t0 }}
			if tc.lastStart > 0 {
				a.last = t0.Add(-tc.lastStart)
			}
			if got := a.mayStart(); got != tc.wantMayRun {
				t.Fatalf("mayStart = %v, want %v", got, tc.wantMayRun)
			}
		})
	}
}

func TestParseCPULine(t *testing.T) {
	tests := []struct {
		name        string
		line        string
		idle, total uint64
		wantErr     bool
	}{
		{"linux 10 fields", "cpu  100 5 50 800 20 1 2 3 7 0\n", 820, 981, false},
		{"old kernel 4 fields", "cpu 10 0 10 80\n", 80, 100, false},
		{"per-cpu line", "cpu0 1 2 3 4 5\n", 0, 0, true},
		{"garbage", "cpu  a b c d e\n", 0, 0, true},
		{"empty", "", 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCPULine(tc.line)
			if (err != nil) != tc.wantErr || got.idle != tc.idle || got.total != tc.total {
				t.Fatalf("parseCPULine(%q) = %+v, %v; want idle %d total %d, error %v", tc.line, got, err, tc.idle, tc.total, tc.wantErr)
			}
		})
	}
}

// TestCPUSampler: the idle fraction is the idle ticks over all ticks since
// the previous reading; a reader that fails makes it unknown.
func TestParsePressureLine(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    time.Duration
		wantErr bool
	}{
		{"linux 6", "some avg10=13.48 avg60=31.33 avg300=35.62 total=831799713\n", 831799713 * time.Microsecond, false},
		{"full line", "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", 0, true},
		{"no total", "some avg10=1.00\n", 0, true},
		{"garbage total", "some total=x\n", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePressureLine(tc.line)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("parsePressureLine(%q) = %v, %v; want %v, error %v", tc.line, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// fakeCPU is a machine whose CPU advances as the test says, read through a
// cpuSampler on a fake clock.
type fakeCPU struct {
	now time.Time
	t   cpuTimes
	err error
}

func (f *fakeCPU) read() (cpuTimes, error) { return f.t, f.err }

// advance moves the clock by d, during which the CPUs were idle the given
// fraction of ticks (100 a second) and some task waited wait of the time.
func (f *fakeCPU) advance(d time.Duration, idle, wait float64) {
	ticks := uint64(d / (10 * time.Millisecond))
	f.now = f.now.Add(d)
	f.t.total += ticks
	f.t.idle += uint64(float64(ticks) * idle)
	f.t.stalled += time.Duration(float64(d) * wait)
}

func TestCPUSampler(t *testing.T) {
	cpu := &fakeCPU{now: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}
	s := &cpuSampler{read: cpu.read, now: func() time.Time { return cpu.now }, window: 5 * time.Second}
	if _, ready, known := s.load(); ready || !known {
		t.Fatalf("first call: ready %v known %v; want not ready (one reading spans nothing), known", ready, known)
	}
	// Three busy seconds, then one idle: one second's glimpse is not enough.
	for range 6 {
		cpu.advance(500*time.Millisecond, 0.02, 0.9)
		if _, ready, _ := s.load(); ready {
			t.Fatalf("ready after %v of readings; want 4s", cpu.now.Sub(s.samples[0].at))
		}
	}
	for range 2 {
		cpu.advance(500*time.Millisecond, 1, 0)
	}
	l, ready, known := s.load()
	if !ready || !known {
		t.Fatalf("after 4s of readings: ready %v known %v", ready, known)
	}
	if l.idle < 0.2 || l.idle > 0.3 || !l.pressureKnown || l.pressure < 0.6 || l.pressure > 0.7 {
		t.Fatalf("load over 3 busy seconds and 1 idle = %+v; want idle ~0.26, pressure ~0.68", l)
	}
	// Ten idle seconds later the window holds only them.
	for range 20 {
		cpu.advance(500*time.Millisecond, 1, 0)
		s.load()
	}
	if l, ready, _ := s.load(); !ready || l.idle < 0.99 || l.pressure > 0.01 {
		t.Fatalf("after 10 idle seconds: %+v ready %v; want idle 1, pressure 0", l, ready)
	}
	// Nobody asked for a while: the readings start over.
	cpu.advance(10*time.Second, 0, 1)
	if _, ready, _ := s.load(); ready {
		t.Fatal("ready right after a 10s gap in the readings")
	}
	// No pressure stall information: idle alone.
	cpu.t.stallUnknown = true
	for range 10 {
		cpu.advance(500*time.Millisecond, 0.5, 0)
		s.load()
	}
	if l, ready, _ := s.load(); !ready || l.pressureKnown || l.idle < 0.45 || l.idle > 0.55 {
		t.Fatalf("without /proc/pressure: %+v ready %v; want idle 0.5, pressure unknown", l, ready)
	}
	failing := &cpuSampler{read: func() (cpuTimes, error) { return cpuTimes{}, os.ErrNotExist }, now: time.Now, window: time.Second}
	if _, _, known := failing.load(); known {
		t.Fatal("load known from a reader that fails")
	}
}

// TestTakeSlot_FirstOfAnotherProcessGoesAhead: a first waiter's marker
// (as another test process leaves it) holds back a plain taker of this
// one, which takes a slot again once the marker is gone.
func TestTakeSlot_FirstOfAnotherProcessGoesAhead(t *testing.T) {
	dir := t.TempDir()
	a, err := takeSlot(dir, 1, "a", time.Millisecond, always, false)
	if err != nil {
		t.Fatal(err)
	}
	unmark, err := markFirstWaiting(dir) // the other process's waiter
	if err != nil {
		t.Fatal(err)
	}
	before := stoodBack.Load()
	got := make(chan string, 1)
	takeInBackground(dir, 1, "plain", always, false, got)
	waitStoodBack(t, before)
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	// The slot is free and the plain taker stands back: the other
	// process's waiter (here, this test) takes it.
	other := flocks.New(filepath.Join(dir, "fleet-slot-0.lock"), "slot")
	for deadline := time.Now().Add(10 * time.Second); other.TryLock("other") != nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the freed slot was not free for the first waiter")
		}
	}
	unmark()
	_ = other.Unlock()
	if g := <-got; g != "plain "+other.Path() {
		t.Fatalf("after the first waiter, the plain taker got %q", g)
	}
}

// TestFirstWaiterAnywhere_StaleMarker: a marker nobody holds (its waiter
// died) holds back no one and is removed.
func TestFirstWaiterAnywhere_StaleMarker(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "123-1"+firstWaitSuffix)
	if err := os.WriteFile(stale, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if firstWaiterAnywhere(dir) {
		t.Fatal("a stale marker counts as a waiter")
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("the stale marker is still there: %v", err)
	}
	unmark, err := markFirstWaiting(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !firstWaiterAnywhere(dir) {
		t.Fatal("a live marker does not count as a waiter")
	}
	unmark()
	if firstWaiterAnywhere(dir) {
		t.Fatal("a removed marker still counts")
	}
}

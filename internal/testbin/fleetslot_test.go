package testbin

import (
	"os"
	"strings"
	"sync"
	"testing"
	"time"
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

// TestTakeSlot: with every slot held, a taker waits, and it gets the slot
// that is given back — the only one it could have taken.
func TestTakeSlot(t *testing.T) {
	dir := t.TempDir()
	a, err := takeSlot(dir, 2, "a", time.Millisecond, always)
	if err != nil {
		t.Fatal(err)
	}
	b, err := takeSlot(dir, 2, "b", time.Millisecond, always)
	if err != nil {
		t.Fatal(err)
	}
	if a.Path() == b.Path() {
		t.Fatalf("two holders of one slot: %s", a.Path())
	}
	got := make(chan string, 1)
	go func() {
		c, err := takeSlot(dir, 2, "c", time.Millisecond, always)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- c.Path()
		_ = c.Unlock()
	}()
	freed := b.Path()
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
	if p := <-got; p != freed {
		t.Fatalf("the waiting taker got %q, want the freed slot %q", p, freed)
	}
	_ = a.Unlock()
}

// TestTakeSlot_UnwritableDir: a slot that cannot be opened is an error, not
// a wait.
func TestTakeSlot_UnwritableDir(t *testing.T) {
	if _, err := takeSlot("/nonexistent/dir", 1, "x", time.Millisecond, always); err == nil {
		t.Fatal("takeSlot in a missing directory succeeded")
	}
}

// TestTakeSlot_SpareSlotsNeedIdleCPU: past the floor a free slot is taken
// only when the CPU is idle enough; below it, whatever the CPU.
func TestTakeSlot_SpareSlotsNeedIdleCPU(t *testing.T) {
	dir := t.TempDir()
	asked := make(chan struct{}) // closed when a taker first asks about the CPU
	var once sync.Once
	adm := &admission{floor: 1, minIdle: 0.35, now: time.Now, idle: func() (float64, bool) {
		once.Do(func() { close(asked) })
		return 0.1, true // busy
	}}
	first, err := takeSlot(dir, 3, "first", time.Millisecond, adm)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		l, err := takeSlot(dir, 3, "second", time.Millisecond, adm)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- l.Path()
	}()
	select {
	case p := <-got:
		t.Fatalf("with the CPU busy and the floor's slot held, the taker got %q", p)
	case <-asked: // it found the floor's slot held and the CPU busy
	}
	// When the floor's slot is given back it takes that one.
	freed := first.Path()
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
		idle       float64
		known      bool
		lastStart  time.Duration // before now; 0 for never
		wantMayRun bool
	}{
		{"idle enough, none started yet", 0.5, true, 0, true},
		{"busy", 0.2, true, 0, false},
		{"at the threshold", 0.35, true, 0, true},
		{"idle enough but one started 500ms ago", 0.9, true, 500 * time.Millisecond, false},
		{"idle enough, the last start 2s ago", 0.9, true, 2 * time.Second, true},
		{"unknown CPU: the count alone bounds", 0, false, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &admission{floor: 1, minIdle: 0.35, cooldown: time.Second,
				idle: func() (float64, bool) { return tc.idle, tc.known },
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
func TestCPUSampler(t *testing.T) {
	reads := []cpuTimes{{idle: 100, total: 200}, {idle: 175, total: 300}}
	s := &cpuSampler{read: func() (cpuTimes, error) {
		r := reads[0]
		if len(reads) > 1 {
			reads = reads[1:]
		}
		return r, nil
	}}
	if f, known := s.idle(); !known || f != 0.75 {
		t.Fatalf("idle = %v, %v; want 0.75 (75 idle of 100 ticks)", f, known)
	}
	failing := &cpuSampler{read: func() (cpuTimes, error) { return cpuTimes{}, os.ErrNotExist }}
	if _, known := failing.idle(); known {
		t.Fatal("idle known from a reader that fails")
	}
}

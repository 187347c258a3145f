package testbin

import (
	"strings"
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

// TestTakeSlot: with every slot held, a taker waits, and it gets the slot
// that is given back — the only one it could have taken.
func TestTakeSlot(t *testing.T) {
	dir := t.TempDir()
	a, err := takeSlot(dir, 2, "a", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	b, err := takeSlot(dir, 2, "b", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if a.Path() == b.Path() {
		t.Fatalf("two holders of one slot: %s", a.Path())
	}
	got := make(chan string, 1)
	go func() {
		c, err := takeSlot(dir, 2, "c", time.Millisecond)
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
	if _, err := takeSlot("/nonexistent/dir", 1, "x", time.Millisecond); err == nil {
		t.Fatal("takeSlot in a missing directory succeeded")
	}
}

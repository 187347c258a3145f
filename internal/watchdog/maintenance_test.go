package watchdog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNewMaintenance(t *testing.T) {
	tests := []struct {
		name   string
		d      time.Duration
		reason string
		field  string
	}{
		{"thirty minutes with a reason", 30 * time.Minute, "db optimize", ""},
		{"a week is the most", MaxMaintenance, "datacenter move", ""},
		{"zero duration", 0, "x", "for"},
		{"negative duration", -time.Minute, "x", "for"},
		{"over a week", MaxMaintenance + time.Second, "x", "for"},
		{"no reason", time.Minute, "  ", "reason"},
		{"reason too long", time.Minute, strings.Repeat("x", 501), "reason"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewMaintenance(t0, tc.d, tc.reason, " alice ")
			if tc.field == "" {
				if err != nil {
					t.Fatalf("NewMaintenance: %v", err)
				}
				if !m.Until.Equal(t0.Add(tc.d)) || m.By != "alice" || !m.Since.Equal(t0) {
					t.Errorf("window = %+v", m)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("NewMaintenance = %v, want ErrInvalid naming %q", err, tc.field)
			}
		})
	}
}

func TestMaintenance_Active(t *testing.T) {
	m := &Maintenance{Reason: "x", Until: t0.Add(time.Minute)}
	tests := []struct {
		name string
		m    *Maintenance
		now  time.Time
		want bool
	}{
		{"nil", nil, t0, false},
		{"before until", m, t0, true},
		{"at until it has ended", m, t0.Add(time.Minute), false},
		{"after until", m, t0.Add(time.Hour), false},
	}
	for _, tc := range tests {
		if got := tc.m.Active(tc.now); got != tc.want {
			t.Errorf("%s: Active = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLoadMaintenance(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, MaintenanceFile)
	if m, err := loadMaintenance(path); m != nil || err != nil {
		t.Fatalf("no file: %v, %v; want nil, nil", m, err)
	}
	want, _ := NewMaintenance(t0, time.Hour, "backup", "bob")
	if err := saveMaintenance(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := loadMaintenance(path)
	if err != nil || got.Reason != "backup" || !got.Until.Equal(want.Until) || got.By != "bob" {
		t.Fatalf("round trip = %+v, %v; want %+v", got, err, want)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadMaintenance(path); !errors.Is(err, ErrMaintenanceFile) || !strings.Contains(err.Error(), path) {
		t.Errorf("corrupt file: %v, want ErrMaintenanceFile naming the file", err)
	}
	if err := os.WriteFile(path, []byte(`{"reason":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadMaintenance(path); !errors.Is(err, ErrMaintenanceFile) {
		t.Errorf("file without until: %v, want ErrMaintenanceFile", err)
	}
	if err := clearMaintenance(path); err != nil {
		t.Fatal(err)
	}
	if err := clearMaintenance(path); err != nil {
		t.Errorf("clearing twice: %v", err)
	}
}

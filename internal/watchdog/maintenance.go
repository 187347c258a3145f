package watchdog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/atomicfile"
)

// Maintenance is a window in which the watchdog does not heal: an operator
// working on a host (a database optimisation, a manual restart, a backup)
// says so, for a bounded time and with a reason, instead of stopping the
// watchdog and forgetting to start it again. Rounds still look at every
// service and report it; they count no strikes and heal nothing. The window
// ends by itself at Until.
type Maintenance struct {
	// Reason says why, for whoever reads status. Required.
	Reason string `json:"reason"`
	// By names who turned it on (a user, a CI job); optional.
	By string `json:"by,omitempty"`
	// Since is when it was turned on.
	Since time.Time `json:"since"`
	// Until is when it ends by itself.
	Until time.Time `json:"until"`
}

// Active reports whether m pauses healing at now: m is set and now is
// before its Until. A nil m is not active.
func (m *Maintenance) Active(now time.Time) bool { return m != nil && now.Before(m.Until) }

// MaxMaintenance is the longest maintenance window: a week. Longer than that
// is not maintenance; turn the watchdog off in the agent's configuration.
const MaxMaintenance = 7 * 24 * time.Hour

// maxReason bounds Maintenance.Reason, in bytes.
const maxReason = 500

// MaintenanceFile is the file in the agent's state directory that keeps the
// maintenance window across agent restarts (JSON, written atomically).
const MaintenanceFile = "watchdog-maintenance.json"

// NewMaintenance returns the window from now for d, after checking the
// request: d more than 0 and at most MaxMaintenance, reason not empty and at
// most 500 bytes. Errors wrap ErrInvalid and name the field and the fix.
func NewMaintenance(now time.Time, d time.Duration, reason, by string) (Maintenance, error) {
	reason, by = strings.TrimSpace(reason), strings.TrimSpace(by)
	switch {
	case d <= 0:
		return Maintenance{}, fmt.Errorf("%w: maintenance for is %v: give how long healing stays paused, more than 0, e.g. --for 30m", ErrInvalid, d)
	case d > MaxMaintenance:
		return Maintenance{}, fmt.Errorf("%w: maintenance for is %v: at most %v; for longer, disable the watchdog in the agent's configuration", ErrInvalid, d, MaxMaintenance)
	case reason == "":
		return Maintenance{}, fmt.Errorf("%w: maintenance reason is empty: say why healing is paused, e.g. --reason \"db optimize\"", ErrInvalid)
	case len(reason) > maxReason:
		return Maintenance{}, fmt.Errorf("%w: maintenance reason is %d bytes: at most %d", ErrInvalid, len(reason), maxReason)
	case len(by) > maxReason:
		return Maintenance{}, fmt.Errorf("%w: maintenance by is %d bytes: at most %d", ErrInvalid, len(by), maxReason)
	}
	return Maintenance{Reason: reason, By: by, Since: now, Until: now.Add(d)}, nil
}

// ErrMaintenanceFile marks a maintenance file that cannot be read back: the
// error names the file; fix or remove it.
var ErrMaintenanceFile = errors.New("watchdog maintenance file unreadable")

// loadMaintenance reads the window kept at path; nil when there is none.
func loadMaintenance(path string) (*Maintenance, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMaintenanceFile, err)
	}
	var m Maintenance
	if err := json.Unmarshal(b, &m); err != nil || m.Until.IsZero() {
		if err == nil {
			err = errors.New("no until")
		}
		return nil, fmt.Errorf("%w: %s: %v: remove it to end maintenance (mythex agent maintenance off), or fix it", ErrMaintenanceFile, path, err)
	}
	return &m, nil
}

// saveMaintenance keeps m at path atomically (temp file, fsync, rename).
func saveMaintenance(path string, m Maintenance) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("watchdog maintenance: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("watchdog maintenance: %w", err)
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("watchdog maintenance: %w", err)
	}
	return nil
}

// clearMaintenance removes the file at path; no file is not an error.
func clearMaintenance(path string) error {
	if err := atomicfile.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("watchdog maintenance: %w", err)
	}
	return nil
}

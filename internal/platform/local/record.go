package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mythex/mythex/internal/atomicfile"
	"github.com/mythex/mythex/internal/platform"
)

// record is what the supervisor keeps of a machine, on disk as JSON.
type record struct {
	ID      string          `json:"id"`
	App     string          `json:"app"`
	Name    string          `json:"name"`
	Config  platform.Config `json:"config"`
	State   platform.State  `json:"state"`
	Desired platform.State  `json:"desired"`
	// Events are newest first, at most MaxEvents.
	Events       []platform.Event `json:"events"`
	RestartCount int              `json:"restart_count"`
	Instance     int              `json:"instance"`
	InstanceID   string           `json:"instance_id"`
	StartedAt    time.Time        `json:"started_at,omitzero"`
	CreatedAt    time.Time        `json:"created_at"`
	UpdatedAt    time.Time        `json:"updated_at"`
	Port         int              `json:"port"`
	PID          int              `json:"pid,omitempty"`
}

// addEvent puts e first and trims the list to max events.
func (r *record) addEvent(e platform.Event, max int) {
	r.Events = platform.TrimEvents(append([]platform.Event{e}, r.Events...), max)
	r.UpdatedAt = e.Timestamp
}

func appDir(stateDir, app string) string { return filepath.Join(stateDir, "apps", app) }

func (r *record) path(stateDir string) string {
	return filepath.Join(appDir(stateDir, r.App), r.ID+".json")
}

func (r *record) logPath(stateDir string) string {
	return filepath.Join(appDir(stateDir, r.App), r.ID+".log")
}

// save writes the record atomically.
func (r *record) save(stateDir string) error {
	if err := os.MkdirAll(appDir(stateDir, r.App), 0o700); err != nil {
		return fmt.Errorf("save machine %s: %w", r.ID, err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("save machine %s: %w", r.ID, err)
	}
	return atomicfile.Write(r.path(stateDir), b, 0o600)
}

// remove deletes the record and the log.
func (r *record) remove(stateDir string) error {
	err := os.Remove(r.path(stateDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	_ = os.Remove(r.logPath(stateDir))
	return nil
}

// loadRecords reads every machine record under stateDir.
func loadRecords(stateDir string) ([]record, error) {
	files, err := filepath.Glob(filepath.Join(stateDir, "apps", "*", "*.json"))
	if err != nil {
		return nil, err
	}
	var out []record
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("load machine %s: %w", f, err)
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("load machine %s: %w", f, err)
		}
		out = append(out, r)
	}
	return out, nil
}

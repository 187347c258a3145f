package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mythex/mythex/internal/atomicfile"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

// instance is one service at one spec. Its fields are guarded by Process.mu.
type instance struct {
	rec    record
	run    *run           // the running process; nil when not running
	health runtime.Health // kept by the health loop while running
	stop   *stopOp        // the stop in progress; nil when none
}

// record is what survives the agent: <StateDir>/instances/<id>.json.
type record struct {
	ID       string             `json:"id"`
	Spec     definition.Service `json:"spec"`
	SpecHash string             `json:"spec_hash"`
	State    runtime.State      `json:"state"`
	// PID is the process id (and process group id) of the last run.
	PID int `json:"pid,omitempty"`
	// StartTicks is the process start time from /proc/<pid>/stat (clock ticks
	// since boot): with PID, it names one process even after pid reuse.
	StartTicks uint64 `json:"start_ticks,omitempty"`
	// PipeInode is the inode of the log pipe, to recognise it as the
	// process's fd 3 on adoption.
	PipeInode    uint64    `json:"pipe_inode,omitempty"`
	StartedAt    time.Time `json:"started_at"`
	FinishedAt   time.Time `json:"finished_at,omitzero"`
	ExitCode     int       `json:"exit_code"`
	Signal       string    `json:"signal,omitempty"`
	RestartCount int       `json:"restart_count"`
	// Detail is the note ServiceStatus.Detail carries.
	Detail string `json:"detail,omitempty"`
}

// run is one running process of an instance.
type run struct {
	pid       int
	startedAt time.Time
	// done is closed once the process has exited and the instance's state
	// says so.
	done chan struct{}
	// logR is the read end of the log pipe; logDone is closed when copying
	// it has ended (EOF, or Close).
	logR      *os.File
	logDone   chan struct{}
	closeOnce sync.Once
	// cancelHealth ends the health loop; nil without a healthcheck.
	cancelHealth context.CancelFunc
}

// closeLog closes the agent's read end of the log pipe, ending the copy.
func (r *run) closeLog() {
	r.closeOnce.Do(func() {
		if r.logR != nil {
			r.logR.Close()
		}
	})
}

// stopOp is one stop of one run, shared by concurrent Stop calls.
type stopOp struct {
	done   chan struct{}
	result runtime.StopResult
}

func instanceID(name, spec string) string { return name + "-" + spec[:12] }

// status reports the instance; p.mu must be held.
func (inst *instance) status() runtime.ServiceStatus {
	r := inst.rec
	s := runtime.ServiceStatus{
		Name:         r.Spec.Name,
		ID:           r.ID,
		SpecHash:     r.SpecHash,
		Version:      r.Spec.Version,
		State:        r.State,
		PID:          r.PID,
		StartedAt:    r.StartedAt,
		FinishedAt:   r.FinishedAt,
		ExitCode:     r.ExitCode,
		Signal:       r.Signal,
		RestartCount: r.RestartCount,
		Health:       runtime.Health{Status: runtime.HealthNone},
		Detail:       r.Detail,
	}
	if inst.run != nil {
		s.Health = inst.health
		s.Health.Log = append([]runtime.CheckResult(nil), inst.health.Log...)
	}
	return s
}

func recordDir(stateDir string) string { return filepath.Join(stateDir, "instances") }

func recordPath(stateDir, id string) string {
	return filepath.Join(recordDir(stateDir), id+".json")
}

// writeRecord persists rec atomically.
func writeRecord(stateDir string, rec record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("record %s: %w", rec.ID, err)
	}
	return atomicfile.Write(recordPath(stateDir, rec.ID), append(b, '\n'), 0o600)
}

func removeRecord(stateDir, id string) error {
	return atomicfile.Remove(recordPath(stateDir, id))
}

// readRecords reads every record in stateDir. A record that cannot be read is
// reported in bad and skipped.
func readRecords(stateDir string) (recs []record, bad []error, err error) {
	entries, err := os.ReadDir(recordDir(stateDir))
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(recordDir(stateDir), name))
		if err != nil {
			bad = append(bad, err)
			continue
		}
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			bad = append(bad, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if rec.ID+".json" != name || rec.SpecHash != rec.Spec.SpecHash() {
			bad = append(bad, fmt.Errorf("%s: %w", name, errors.New("record does not match its name or spec")))
			continue
		}
		recs = append(recs, rec)
	}
	return recs, bad, nil
}

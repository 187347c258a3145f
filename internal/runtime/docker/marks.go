package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/mythex/mythex/internal/atomicfile"
)

// marksFile is the runtime's record of what Docker does not keep, in
// Options.StateDir.
const marksFile = "docker-containers.json"

// mark is what the runtime remembers about one container beyond what Docker
// reports: whether its last exit was a Stop (Docker's inspect does not say
// so), and how often Start restarted it.
type mark struct {
	// StoppedFinishedAt is Docker's State.FinishedAt of the exit a Stop
	// caused: while the container's FinishedAt is still this, it is stopped,
	// not exited on its own.
	StoppedFinishedAt string `json:"stopped_finished_at,omitempty"`
	// Killed: that Stop had to SIGKILL.
	Killed bool `json:"killed,omitempty"`
	// Starts counts Starts of the existing container (restarts by the
	// runtime, not by Docker's restart policy).
	Starts int `json:"starts,omitempty"`
}

// marks is the mark of every container, by container ID, persisted as one
// JSON file written atomically on every change. Safe for concurrent use.
type marks struct {
	path string
	mu   sync.Mutex
	m    map[string]mark
}

// loadMarks reads the marks in dir; a missing file is no marks.
func loadMarks(dir string) (*marks, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ms := &marks{path: filepath.Join(dir, marksFile), m: map[string]mark{}}
	b, err := os.ReadFile(ms.path)
	if errors.Is(err, os.ErrNotExist) {
		return ms, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &ms.m); err != nil {
		return nil, fmt.Errorf("%s: %w", ms.path, err)
	}
	if ms.m == nil {
		ms.m = map[string]mark{}
	}
	return ms, nil
}

// get returns id's mark (zero when none).
func (ms *marks) get(id string) mark {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.m[id]
}

// update applies f to id's mark and persists; on a write error the marks
// are unchanged.
func (ms *marks) update(id string, f func(*mark)) error {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	next := maps.Clone(ms.m)
	m := next[id]
	f(&m)
	if m == (mark{}) {
		delete(next, id)
	} else {
		next[id] = m
	}
	return ms.save(next)
}

// drop forgets ids and persists.
func (ms *marks) drop(ids ...string) error {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	next := maps.Clone(ms.m)
	for _, id := range ids {
		delete(next, id)
	}
	return ms.save(next)
}

// save writes next and makes it current; ms.mu must be held.
func (ms *marks) save(next map[string]mark) error {
	b, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(ms.path, append(b, '\n'), 0o600); err != nil {
		return err
	}
	ms.m = next
	return nil
}

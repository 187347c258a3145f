// Package hostlock is the one lock of a host: a file lock (flock(2), through
// gofrs/flock) on <state-dir>/host.lock. The agent holds it for the life of a
// deploy lease, each watchdog round tries it without blocking and skips when it
// is held, and `mythex agent bootstrap` takes it at boot — so a deploy, the
// watchdog and the bootstrap never act on a host at once (DESIGN §1a, fix 1).
//
// flock locks belong to an open file description, so the lock excludes other
// processes and other Lock values in the same process alike.
package hostlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/mythex/mythex/internal/atomicfile"
)

// FileName is the name of the lock file inside a host's state directory.
const FileName = "host.lock"

// holderSuffix names the file beside the lock that records who holds it.
const holderSuffix = ".holder"

// ErrHeld is returned (wrapped, naming the holder) when the lock is taken by
// someone else.
var ErrHeld = errors.New("host lock is held")

// Lock is the host lock of one state directory. The zero value is not usable;
// call New. A Lock is safe for concurrent use; it is not re-entrant: TryLock on a
// Lock that this value already holds fails with ErrHeld.
type Lock struct {
	path string

	mu     sync.Mutex
	fl     *flock.Flock
	holder string
}

// Path returns the lock file's path for stateDir.
func Path(stateDir string) string { return filepath.Join(stateDir, FileName) }

// New returns the host lock of stateDir. It touches nothing on disk until the
// lock is taken.
func New(stateDir string) *Lock {
	return &Lock{path: Path(stateDir)}
}

// TryLock takes the lock without blocking and records holder (a free-form name
// such as "deploy web-1 by alice" or "watchdog") for Holder. It returns ErrHeld,
// wrapped with the current holder's name, when the lock is taken, and the
// underlying error, wrapped, when the lock file cannot be opened.
func (l *Lock) TryLock(holder string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fl != nil {
		return fmt.Errorf("%w by %s", ErrHeld, l.holder)
	}
	fl := flock.New(l.path)
	ok, err := fl.TryLock()
	if err != nil {
		return fmt.Errorf("host lock %s: %w", l.path, err)
	}
	if !ok {
		return fmt.Errorf("%w by %s", ErrHeld, readHolder(l.path))
	}
	l.fl, l.holder = fl, holder
	// The holder file is informational (status output); losing it is harmless.
	_ = atomicfile.Write(l.path+holderSuffix, []byte(holder+"\n"), 0o644)
	return nil
}

// Lock takes the lock, waiting (polling every poll interval) until it is free or
// ctx is done; then it returns ctx's error, wrapped with the holder's name.
func (l *Lock) Lock(ctx context.Context, holder string, poll time.Duration) error {
	for {
		err := l.TryLock(holder)
		if !errors.Is(err, ErrHeld) {
			return err
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for host lock (%v): %w", err, ctx.Err())
		case <-t.C:
		}
	}
}

// Unlock releases the lock. Unlocking a Lock that is not held is a no-op.
func (l *Lock) Unlock() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fl == nil {
		return nil
	}
	_ = os.Remove(l.path + holderSuffix)
	err := l.fl.Unlock()
	l.fl, l.holder = nil, ""
	if err != nil {
		return fmt.Errorf("release host lock %s: %w", l.path, err)
	}
	return nil
}

// Held reports whether this Lock value holds the lock.
func (l *Lock) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fl != nil
}

// Holder returns who holds the lock of stateDir now — this process or another —
// or "" when it is free.
func Holder(stateDir string) string {
	path := Path(stateDir)
	probe := flock.New(path)
	ok, err := probe.TryLock()
	if err == nil && ok {
		_ = probe.Unlock()
		return ""
	}
	return readHolder(path)
}

func readHolder(path string) string {
	b, err := os.ReadFile(path + holderSuffix)
	if err != nil {
		return "another process"
	}
	return strings.TrimSpace(string(b))
}

// Package flocks is mythex's one kind of lock between processes: a file lock
// (flock(2), through gofrs/flock) with a holder file beside it that says who
// holds it, for the error the next taker gets. The host lock
// (internal/hostlock), the agent's claim on its state directory, the publish
// gate's per-app lock and the local platform's supervisor lock are all one.
//
// flock locks belong to an open file description, so a Lock excludes other
// processes and other Lock values in the same process alike, and the kernel
// releases it when its process dies: a holder file left behind by a crash is
// stale and is overwritten by the next taker.
package flocks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/mythex/mythex/internal/atomicfile"
)

// HolderSuffix names the file beside a lock file that records who holds it.
const HolderSuffix = ".holder"

// ErrHeld matches (errors.Is) every *HeldError: the lock is taken by
// someone else.
var ErrHeld = errors.New("lock is held")

// unknownHolder stands for a holder that wrote no holder file.
const unknownHolder = "another process"

// HeldError is TryLock's error when the lock is taken: errors.As gives the
// holder's name without parsing the message.
type HeldError struct {
	// What names the lock in messages ("host lock").
	What string
	// Path is the lock file.
	Path string
	// Holder is who holds it, as it recorded itself; "another process" when
	// it recorded nothing.
	Holder string
}

// Error is "<what> is held by <holder>".
func (e *HeldError) Error() string { return fmt.Sprintf("%s is held by %s", e.What, e.Holder) }

// Is makes errors.Is(err, ErrHeld) hold.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Lock is one lock file. The zero value is not usable; call New. A Lock is
// safe for concurrent use; it is not re-entrant: TryLock on a Lock that this
// value already holds fails with a *HeldError.
type Lock struct {
	path, what string

	mu     sync.Mutex
	fl     *flock.Flock
	holder string
}

// New returns the lock of the file at path, named what in errors. It touches
// nothing on disk until the lock is taken; the directory must exist then.
func New(path, what string) *Lock { return &Lock{path: path, what: what} }

// Path is the lock file's path.
func (l *Lock) Path() string { return l.path }

// TryLock takes the lock without blocking and records holder (a free-form
// name such as "deploy web-1 by alice" or "agent (pid 42)") in the holder
// file. It returns a *HeldError, naming the current holder, when the lock is
// taken, and the underlying error, wrapped, when the lock file cannot be
// opened (a missing or unwritable directory).
func (l *Lock) TryLock(holder string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fl != nil {
		return &HeldError{What: l.what, Path: l.path, Holder: l.holder}
	}
	fl := flock.New(l.path)
	ok, err := fl.TryLock()
	if err != nil {
		return fmt.Errorf("%s %s: %w", l.what, l.path, err)
	}
	if !ok {
		return &HeldError{What: l.what, Path: l.path, Holder: readHolder(l.path)}
	}
	l.fl, l.holder = fl, holder
	// The holder file is informational (errors, status); losing it is
	// harmless: the next taker reads "another process".
	_ = atomicfile.Write(l.path+HolderSuffix, []byte(holder+"\n"), 0o644)
	return nil
}

// Lock takes the lock, waiting (polling every poll interval) until it is free
// or ctx is done; then it returns ctx's error, wrapped with the holder's
// name.
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
			return fmt.Errorf("waiting for %s (%v): %w", l.what, err, ctx.Err())
		case <-t.C:
		}
	}
}

// Unlock releases the lock and removes the holder file. Unlocking a Lock
// that is not held is a no-op.
func (l *Lock) Unlock() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fl == nil {
		return nil
	}
	_ = os.Remove(l.path + HolderSuffix)
	err := l.fl.Unlock()
	l.fl, l.holder = nil, ""
	if err != nil {
		return fmt.Errorf("release %s %s: %w", l.what, l.path, err)
	}
	return nil
}

// Held reports whether this Lock value holds the lock.
func (l *Lock) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fl != nil
}

// Holder returns who holds the lock file at path now — this process or
// another — or "" when it is free (whatever a stale holder file says).
func Holder(path string) string {
	probe := flock.New(path)
	ok, err := probe.TryLock()
	if err == nil && ok {
		_ = probe.Unlock()
		return ""
	}
	return readHolder(path)
}

func readHolder(path string) string {
	b, err := os.ReadFile(path + HolderSuffix)
	if err != nil || strings.TrimSpace(string(b)) == "" {
		return unknownHolder
	}
	return strings.TrimSpace(string(b))
}

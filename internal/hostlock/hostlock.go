// Package hostlock is the one lock of a host: a file lock (package flocks)
// on <state-dir>/host.lock. The agent holds it for the life of a deploy
// lease, each watchdog round tries it without blocking and skips when it is
// held, and `mythex agent bootstrap` takes it at boot — so a deploy, the
// watchdog and the bootstrap never act on a host at once (docs/watchdog.md).
package hostlock

import (
	"path/filepath"

	"github.com/mythex/mythex/internal/flocks"
)

// FileName is the name of the lock file inside a host's state directory.
const FileName = "host.lock"

// ErrHeld matches (errors.Is) the error of taking a host lock someone else
// holds; errors.As with *flocks.HeldError gives the holder.
var ErrHeld = flocks.ErrHeld

// Lock is a host lock.
type Lock = flocks.Lock

// Path returns the lock file's path for stateDir.
func Path(stateDir string) string { return filepath.Join(stateDir, FileName) }

// New returns the host lock of stateDir. It touches nothing on disk until
// the lock is taken.
func New(stateDir string) *Lock { return flocks.New(Path(stateDir), "host lock") }

// Holder returns who holds the host lock of stateDir now — this process or
// another — or "" when it is free.
func Holder(stateDir string) string { return flocks.Holder(Path(stateDir)) }

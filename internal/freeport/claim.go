package freeport

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/gofrs/flock"
)

// claimDir holds one lock file per claimed port. Its name predates this
// package (the demo's fleets were its first users); it stays so that every
// build of mythex and its tests shares one set of claims.
func claimDir() string { return filepath.Join(os.TempDir(), "mythex-demo-ports") }

// claimPort takes port for this process across processes: it locks a file
// named after the port for the life of the process, so other processes
// (another demo, the other test packages running at the same time) skip it,
// and the kernel drops the lock when the process ends. ok is false when
// another live process holds it. A directory that cannot be written claims
// nothing and lets the port through: the in-process map still keeps this
// process's callers apart. undo gives the claim back (for a port found
// taken after all). handedOut must be held.
func claimPort(port int) (ok bool, undo func()) {
	nothing := func() {}
	dir := claimDir()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true, nothing
	}
	l := flock.New(filepath.Join(dir, strconv.Itoa(port)))
	ok, err := l.TryLock()
	if err != nil {
		return true, nothing
	}
	if !ok {
		return false, nothing
	}
	handedOut.claims = append(handedOut.claims, l)
	return true, func() {
		handedOut.claims = slices.DeleteFunc(handedOut.claims, func(c *flock.Flock) bool { return c == l })
		_ = l.Unlock()
	}
}

package testbin

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/gofrs/flock"
)

// firstWaitSuffix names the markers of FleetSlotFirst callers waiting for a
// slot, in the slots' directory: one file per waiter, flocked while it
// waits, so that every test process of the checkout sees it and a waiter
// that dies leaves a marker anyone may remove.
const firstWaitSuffix = ".first-wait"

// firstWaitSeq makes this process's marker names unique.
var firstWaitSeq atomic.Int64

// markFirstWaiting publishes that a first caller of this process waits for a
// slot in dir, until the returned func is called. The marker is locked
// before it gets its name, so no one ever sees it unlocked while its
// waiter lives.
func markFirstWaiting(dir string) (func(), error) {
	name := fmt.Sprintf("%d-%d", os.Getpid(), firstWaitSeq.Add(1))
	tmp := filepath.Join(dir, "."+name+".tmp")
	l := flock.New(tmp)
	ok, err := l.TryLock()
	switch {
	case err != nil:
		return nil, fmt.Errorf("fleet slot: mark a first waiter: %w", err)
	case !ok:
		return nil, fmt.Errorf("fleet slot: mark a first waiter: %s is locked by another process", tmp)
	}
	path := filepath.Join(dir, name+firstWaitSuffix)
	if err := os.Rename(tmp, path); err != nil {
		_ = l.Unlock()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("fleet slot: mark a first waiter: %w", err)
	}
	return func() {
		_ = os.Remove(path)
		_ = l.Unlock()
	}, nil
}

// firstWaiterAnywhere reports whether a first caller of any test process
// of the checkout, this one included, waits for a slot in dir. A marker
// whose lock can be taken belongs to a waiter that is gone: it is removed.
func firstWaiterAnywhere(dir string) bool {
	paths, _ := filepath.Glob(filepath.Join(dir, "*"+firstWaitSuffix))
	for _, p := range paths {
		l := flock.New(p)
		ok, err := l.TryLock()
		switch {
		case err != nil:
			continue // gone meanwhile
		case ok:
			_ = os.Remove(p)
			_ = l.Unlock()
		default:
			return true
		}
	}
	return false
}

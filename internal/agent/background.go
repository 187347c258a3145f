package agent

import (
	"errors"
	"sync"
)

// errClosing is the outcome of work the agent refused because Close began.
var errClosing = errors.New("agent is closing: nothing new starts")

// background runs the agent's own goroutines — lease expiries and the
// recoveries they start, retries of failed recoveries, the stops a drain
// begins — so that Close can wait for every one of them, and refuses new ones
// once Close began: work that would change what runs (a recovery starting the
// last good version) never begins on an agent that is going away, where it
// would leave a service behind that nothing stops. A lease whose expiry is
// refused stays on disk, and the next agent on the state directory recovers
// it (resumeLeases).
type background struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Go runs f in a goroutine unless close began, and reports whether it does.
func (b *background) Go(f func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Go(f)
	return true
}

// close refuses new work and returns once every goroutine Go started ended.
func (b *background) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.wg.Wait()
}

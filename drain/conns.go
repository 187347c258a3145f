package drain

import (
	"net"
	"net/http"
	"sync"
)

// connTracker follows the http.Server's connections through its ConnState hook
// so that, when the shutdown timeout runs out, Serve can tell requests really
// in flight (to be cut) from connections that were already done: Shutdown only
// polls for idleness every ≤500ms, so a request finishing just before the
// timeout would otherwise be reported as cut.
type connTracker struct {
	mu    sync.Mutex
	state map[net.Conn]http.ConnState
}

// hook returns a ConnState hook recording every state change and then calling
// next (the hook the http.Server had, if any).
func (t *connTracker) hook(next func(net.Conn, http.ConnState)) func(net.Conn, http.ConnState) {
	return func(c net.Conn, st http.ConnState) {
		t.mu.Lock()
		switch st {
		case http.StateClosed, http.StateHijacked:
			delete(t.state, c)
		default:
			if t.state == nil {
				t.state = map[net.Conn]http.ConnState{}
			}
			t.state[c] = st
		}
		t.mu.Unlock()
		if next != nil {
			next(c, st)
		}
	}
}

// active returns the number of connections with a request in flight
// (http.StateActive: at least one byte of a request read, answer not done).
// Hijacked connections (e.g. WebSockets) are not counted: net/http no longer
// tracks them, and neither does Shutdown.
func (t *connTracker) active() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, st := range t.state {
		if st == http.StateActive {
			n++
		}
	}
	return n
}

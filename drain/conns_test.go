package drain

import (
	"net"
	"net/http"
	"testing"
)

func TestConnTracker_Active(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c, d := net.Pipe()
	defer c.Close()
	defer d.Close()

	var chained []http.ConnState
	var tr connTracker
	hook := tr.hook(func(_ net.Conn, st http.ConnState) { chained = append(chained, st) })

	steps := []struct {
		name string
		conn net.Conn
		st   http.ConnState
		want int
	}{
		{"a new", a, http.StateNew, 0},
		{"a reads a request", a, http.StateActive, 1},
		{"c new", c, http.StateNew, 1},
		{"c reads a request", c, http.StateActive, 2},
		{"a answered, idle", a, http.StateIdle, 1},
		{"c hijacked", c, http.StateHijacked, 0},
		{"a active again", a, http.StateActive, 1},
		{"a closed", a, http.StateClosed, 0},
	}
	for i, s := range steps {
		hook(s.conn, s.st)
		if got := tr.active(); got != s.want {
			t.Errorf("after %q: active() = %d, want %d", s.name, got, s.want)
		}
		if len(chained) != i+1 || chained[i] != s.st {
			t.Fatalf("after %q: the previous ConnState hook saw %v", s.name, chained)
		}
	}
}

func TestNew_ChainsConnStateHook(t *testing.T) {
	called := 0
	srv := &http.Server{ConnState: func(net.Conn, http.ConnState) { called++ }}
	if _, err := New(srv, Config{NoSignals: true, Logger: discardLogger()}); err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	srv.ConnState(a, http.StateNew)
	if called != 1 {
		t.Errorf("the application's ConnState hook was called %d times, want 1", called)
	}
}

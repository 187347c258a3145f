package freeport

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gofrs/flock"
)

// TestPorts: ports are distinct across calls, free (bindable) when
// returned, and below the kernel's ephemeral range where it is known, so no
// bind to port 0 or outgoing connection elsewhere takes them meanwhile.
func TestPorts(t *testing.T) {
	t.Parallel()
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 3 {
		ports, err := Ports(17)
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) != 17 {
			t.Fatalf("%d ports, want 17", len(ports))
		}
		for _, p := range ports {
			if seen[p] {
				t.Errorf("port %d handed out twice", p)
			}
			seen[p] = true
			if low > minPort && (p < minPort || p >= low) {
				t.Errorf("port %d outside [%d, %d): inside the ephemeral range", p, minPort, low)
			}
			l, err := net.Listen("tcp", addr(p))
			if err != nil {
				t.Errorf("port %d is not free: %v", p, err)
				continue
			}
			l.Close()
		}
	}
}

// TestTryPort: a port is claimed before it is bound to test it, so a port
// another process claimed (and may bind at any moment) is never bound here
// — the old order, bind then claim, held such a port bound while it searched
// on, and the other process's own bind failed; a port bound by a process
// that does not claim is given back.
func TestTryPort(t *testing.T) {
	t.Parallel()
	dir := claimDir()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	// unclaimedPort is a port free now and claimed by nobody; the test
	// claims it through its own lock handle when claim is set, as another
	// process would.
	unclaimedPort := func(t *testing.T) int {
		t.Helper()
		for range 100 {
			l, err := net.Listen("tcp", addr(0))
			if err != nil {
				t.Fatal(err)
			}
			p := l.Addr().(*net.TCPAddr).Port
			l.Close()
			if probe := flock.New(filepath.Join(dir, strconv.Itoa(p))); probe != nil {
				if ok, err := probe.TryLock(); err == nil && ok {
					_ = probe.Unlock()
					return p
				}
			}
		}
		t.Fatal("no unclaimed port in 100 tries")
		return 0
	}
	cases := []struct {
		name string
		// setup prepares port and returns what holds it (closed at the end).
		setup      func(t *testing.T, port int) func()
		want       bool
		wantListen int
		// claim is who holds the port's claim after the call: "here",
		// "nobody" (given back), or "other" (the setup's).
		claim string
	}{
		{"free and unclaimed: claimed, bound once", func(*testing.T, int) func() { return func() {} }, true, 1, "here"},
		{"claimed by another process: never bound", func(t *testing.T, port int) func() {
			other := flock.New(filepath.Join(dir, strconv.Itoa(port)))
			if ok, err := other.TryLock(); err != nil || !ok {
				t.Fatalf("claim %d as another process: %v %v", port, ok, err)
			}
			return func() { _ = other.Unlock() }
		}, false, 0, "other"},
		{"bound by a process that does not claim: given back", func(t *testing.T, port int) func() {
			l, err := net.Listen("tcp", addr(port))
			if err != nil {
				t.Fatal(err)
			}
			return func() { l.Close() }
		}, false, 1, "nobody"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			port := unclaimedPort(t)
			defer tc.setup(t, port)()
			listens := 0
			listen := func(network, address string) (net.Listener, error) {
				listens++
				return net.Listen(network, address)
			}
			handedOut.Lock()
			_, ok := tryPort(port, listen)
			handedOut.Unlock()
			if ok != tc.want || listens != tc.wantListen {
				t.Errorf("tryPort(%d) = %v after %d binds; want %v after %d", port, ok, listens, tc.want, tc.wantListen)
			}
			if tc.claim == "other" {
				return // held by the setup's handle until the end
			}
			probe := flock.New(filepath.Join(dir, strconv.Itoa(port)))
			free, err := probe.TryLock()
			if err != nil {
				t.Fatal(err)
			}
			if free {
				_ = probe.Unlock()
			}
			if got := map[bool]string{true: "nobody", false: "here"}[free]; got != tc.claim {
				t.Errorf("claim of %d held by %s after the call, want %s", port, got, tc.claim)
			}
		})
	}
}

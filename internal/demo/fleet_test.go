package demo

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gofrs/flock"
)

// TestFreePorts: ports are distinct across calls, free (bindable) when
// returned, and below the kernel's ephemeral range where it is known, so no
// bind to port 0 or outgoing connection elsewhere takes them meanwhile.
func TestFreePorts(t *testing.T) {
	t.Parallel()
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 3 {
		ports, err := freePorts(17)
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
			if low > minFleetPort && (p < minFleetPort || p >= low) {
				t.Errorf("port %d outside [%d, %d): inside the ephemeral range", p, minFleetPort, low)
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

// TestFreePorts_ClaimedAcrossProcesses: a port freePorts hands out is
// claimed for the life of the process — another process (here: another
// lock handle, as flock locks belong to the open file) cannot claim it — and
// a port another process claimed is never handed out here.
func TestFreePorts_ClaimedAcrossProcesses(t *testing.T) {
	t.Parallel()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(os.TempDir(), "mythex-demo-ports")
	other := flock.New(filepath.Join(dir, strconv.Itoa(ports[0])))
	if ok, err := other.TryLock(); err != nil || ok {
		t.Fatalf("another process could claim handed-out port %d (ok=%v, err=%v)", ports[0], ok, err)
	}
	// A port claimed elsewhere: find one free now, claim it as another
	// process would, and check this process refuses it.
	l, err := net.Listen("tcp", addr(0))
	if err != nil {
		t.Fatal(err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	l.Close()
	theirs := flock.New(filepath.Join(dir, strconv.Itoa(p)))
	if ok, err := theirs.TryLock(); err != nil || !ok {
		t.Fatalf("claim port %d as another process: ok=%v err=%v", p, ok, err)
	}
	defer theirs.Unlock()
	handedOut.Lock()
	got := claimPort(p)
	handedOut.Unlock()
	if got {
		t.Errorf("port %d, claimed by another process, was claimed here too", p)
	}
}

// TestComposeYAML_AppExeDropsTheSubcommand: with FleetOptions.AppExe the
// services run the sample app alone, which takes no `sample-app`
// subcommand: StartFleet drops every service's command line, so each of
// the four services must have one in exactly the form it removes.
func TestComposeYAML_AppExeDropsTheSubcommand(t *testing.T) {
	if n := bytes.Count(composeYAML, []byte("\n    command: [sample-app]")); n != 4 {
		t.Fatalf("compose.yaml has %d service command lines of the form StartFleet drops, want 4 (one a service)", n)
	}
}

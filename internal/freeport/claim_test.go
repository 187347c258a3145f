package freeport

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gofrs/flock"
)

// TestPorts_ClaimedAcrossProcesses: a port Ports hands out is claimed for
// the life of the process — another process (here: another lock handle, as
// flock locks belong to the open file) cannot claim it — and a port another
// process claimed is never handed out here.
func TestPorts_ClaimedAcrossProcesses(t *testing.T) {
	t.Parallel()
	ports, err := Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	dir := claimDir()
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
	got, _ := claimPort(p)
	handedOut.Unlock()
	if got {
		t.Errorf("port %d, claimed by another process, was claimed here too", p)
	}
}

package process

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/runtime"
)

// The scenario, first half: the instance record cannot be written
// (the state directory refuses writes). The start fails and stops what it
// started, so no orphan is left to hold the port.
func TestProcess_StartFailsWhenItsRecordCannotBeWritten(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	p := newProcess(t, Options{StateDir: state})
	// As root a read-only mode does not stop writes; a file where the
	// records' directory should be does.
	rd := recordDir(p.opts.StateDir)
	if err := os.RemoveAll(rd); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rd, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	svc := withHTTPHealth(t, childService(t, "api", "v1", nil))
	err := p.Start(context.Background(), svc)
	if err == nil || !strings.Contains(err.Error(), "record the instance") {
		t.Fatalf("Start = %v, want it to fail on the record", err)
	}
	sts, _ := p.Status(context.Background())
	for _, s := range sts {
		if s.Running() {
			t.Errorf("%s runs though its start failed", s.ID)
		}
	}
	if len(findMarked(p.opts.StateDir)) != 0 {
		t.Error("a process of the failed start is still alive")
	}
	if _, held := runtime.PortHolder(svc.Process.Port); held {
		t.Error("the failed start left its port held")
	}
}

// Second half: services whose records are missing are found by their marker
// when the agent starts again — one without a record is stopped, one whose
// record says it is not running is adopted.
func TestProcess_FindsItsServicesWithoutRecords(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	first, err := New(Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	orphan := withHTTPHealth(t, childService(t, "api", "v1", nil))
	stale := withHTTPHealth(t, childService(t, "gateway", "v1", nil))
	mustStart(t, first, orphan)
	mustStart(t, first, stale)
	sts, _ := first.Status(context.Background())
	pids := map[string]int{}
	for _, s := range sts {
		pids[s.Name] = s.PID
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	// api's record is lost; gateway's says it was stopped.
	if err := os.Remove(recordPath(first.opts.StateDir, instanceID("api", orphan.SpecHash()))); err != nil {
		t.Fatal(err)
	}
	gwID := instanceID("gateway", stale.SpecHash())
	rec, ok := readOne(t, first.opts.StateDir, gwID)
	if !ok {
		t.Fatal("no gateway record")
	}
	rec.State, rec.PID, rec.StartTicks = runtime.StateStopped, 0, 0
	if err := writeRecord(first.opts.StateDir, rec); err != nil {
		t.Fatal(err)
	}

	second := newProcess(t, Options{StateDir: state})
	if !processGone(pids["api"]) {
		t.Errorf("the orphan api (pid %d, no record) still runs after the restart", pids["api"])
	}
	st := waitStatus(t, second, "gateway", "adopted", func(s runtime.ServiceStatus) bool { return s.Running() })
	if st.PID != pids["gateway"] {
		t.Errorf("gateway adopted as pid %d, want %d", st.PID, pids["gateway"])
	}
	// api can start again: its port is free.
	mustStart(t, second, orphan)
}

// A port held by someone else is reported as such, naming the holder, and
// nothing is started.
func TestProcess_PortHeldBySomeoneElse(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	svc := withHTTPHealth(t, childService(t, "api", "v1", nil))
	svc.Process.Port = ln.Addr().(*net.TCPAddr).Port
	err = p.Start(context.Background(), svc)
	if !errors.Is(err, ErrPortHeld) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), strconv.Itoa(svc.Process.Port)) {
		t.Fatalf("Start = %v, want ErrPortHeld naming port %d and pid %d", err, svc.Process.Port, os.Getpid())
	}
	if sts, _ := p.Status(context.Background()); len(sts) != 0 {
		t.Errorf("something was started: %+v", sts)
	}
}

func readOne(t *testing.T, stateDir, id string) (record, bool) {
	t.Helper()
	recs, _, err := readRecords(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.ID == id {
			return r, true
		}
	}
	return record{}, false
}

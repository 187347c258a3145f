package process

import (
	"bytes"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/runtime"
)

// TestProcess_AdoptAfterAgentRestart: the agent goes away (Close) while a
// service runs; a new agent on the same state adopts it, keeps logging its
// output, checks its health and stops it gracefully.
func TestProcess_AdoptAfterAgentRestart(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	first, err := New(Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	svc := withHTTPHealth(t, childService(t, "gateway", "v1", map[string]string{"CHILD_TICK": "20ms"}))
	mustStart(t, first, svc)
	before := waitStatus(t, first, "gateway", "healthy", func(s runtime.ServiceStatus) bool { return s.Health.Status == runtime.HealthHealthy })
	if err := first.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if processGone(before.PID) {
		t.Fatalf("the service died with its agent")
	}

	second := newProcess(t, Options{StateDir: state})
	st := waitStatus(t, second, "gateway", "adopted and healthy", func(s runtime.ServiceStatus) bool { return s.Health.Status == runtime.HealthHealthy })
	if !st.Running() || st.PID != before.PID || !st.StartedAt.Equal(before.StartedAt) || !strings.Contains(st.Detail, "adopted") {
		t.Errorf("adopted status = %+v, want the same running process", st)
	}

	// Its output, written while no agent read it and after, still reaches
	// the log, after the adoption line.
	end := time.Now().Add(deadline)
	for {
		log, _ := os.ReadFile(second.LogPath("gateway"))
		i := bytes.Index(log, []byte("adopted by a new agent"))
		if i >= 0 && bytes.Contains(log[i:], []byte("tick")) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("no output logged after adoption:\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}

	res := mustStop(t, second, "gateway", 10*time.Second)
	if !res.WasRunning || res.Killed || res.ExitCode != -1 {
		t.Errorf("stop of an adopted service = %+v, want a graceful stop with exit code unknown (-1)", res)
	}
	st = waitStatus(t, second, "gateway", "stopped", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateStopped })
	if !processGone(st.PID) {
		t.Errorf("pid %d still runs after Stop", st.PID)
	}
	log, _ := os.ReadFile(second.LogPath("gateway"))
	if !bytes.Contains(log, []byte("got SIGTERM")) {
		t.Errorf("the SIGTERM handler's output did not reach the log:\n%s", log)
	}
	// A restart of the adopted instance is an ordinary restart.
	mustStart(t, second, svc)
	st = waitStatus(t, second, "gateway", "restarted", func(s runtime.ServiceStatus) bool { return s.Running() })
	if st.RestartCount != 1 || st.Detail != "" {
		t.Errorf("restarted status = %+v", st)
	}
}

// TestProcess_AdoptFindsDeadProcess: a service that died while no agent ran
// is reported exited, exit code unknown, and can be started again.
func TestProcess_AdoptFindsDeadProcess(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	first, err := New(Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	svc := childService(t, "api", "v1", nil)
	mustStart(t, first, svc)
	st := waitStatus(t, first, "api", "running", func(s runtime.ServiceStatus) bool { return s.PID > 0 })
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(deadline)
	for !processGone(st.PID) && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}

	second := newProcess(t, Options{StateDir: state})
	got := waitStatus(t, second, "api", "exited", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateExited })
	if got.ExitCode != -1 || !strings.Contains(got.Detail, "no agent") {
		t.Errorf("status = %+v, want exited with unknown exit code", got)
	}
	mustStart(t, second, svc)
	waitStatus(t, second, "api", "running again", func(s runtime.ServiceStatus) bool { return s.Running() && s.RestartCount == 1 })
}

// TestProcess_AdoptIgnoresReusedPID: a record whose pid now belongs to
// another process (different start time) is not adopted.
func TestProcess_AdoptIgnoresReusedPID(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	first, err := New(Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	svc := childService(t, "api", "v1", nil)
	mustStart(t, first, svc)
	first.mu.Lock()
	var rec record
	for _, inst := range first.instances {
		rec = inst.rec
	}
	first.mu.Unlock()
	stopAll(t, first)

	// Pretend the record names this test process, which did not start at
	// the recorded time.
	rec.State = runtime.StateRunning
	rec.PID = os.Getpid()
	if err := writeRecord(state, rec); err != nil {
		t.Fatal(err)
	}
	second := newProcess(t, Options{StateDir: state})
	st, err := second.Status(context.Background())
	if err != nil || len(st) != 1 || st[0].State != runtime.StateExited {
		t.Errorf("status = %+v, %v; want the instance exited, not an adopted test process", st, err)
	}
}

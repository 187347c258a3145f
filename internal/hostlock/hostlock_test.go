package hostlock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestLock_TryLock(t *testing.T) {
	dir := t.TempDir()
	a, b := New(dir), New(dir)
	if err := a.TryLock("deploy web-1"); err != nil {
		t.Fatalf("first TryLock: %v", err)
	}
	err := b.TryLock("watchdog")
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "deploy web-1") {
		t.Fatalf("second TryLock = %v, want ErrHeld naming the holder", err)
	}
	if err := a.TryLock("again"); !errors.Is(err, ErrHeld) {
		t.Fatalf("re-entrant TryLock = %v, want ErrHeld", err)
	}
	if h := Holder(dir); h != "deploy web-1" {
		t.Errorf("Holder = %q", h)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if h := Holder(dir); h != "" {
		t.Errorf("Holder after unlock = %q, want empty", h)
	}
	if err := b.TryLock("watchdog"); err != nil {
		t.Fatalf("TryLock after unlock: %v", err)
	}
	if !b.Held() || a.Held() {
		t.Errorf("Held: a=%v b=%v", a.Held(), b.Held())
	}
	_ = b.Unlock()
}

func TestLock_LockWaitsThenTimesOut(t *testing.T) {
	dir := t.TempDir()
	a, b := New(dir), New(dir)
	if err := a.TryLock("bootstrap"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := b.Lock(ctx, "deploy", 5*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v, want deadline exceeded", err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Lock(context.Background(), "deploy", 5*time.Millisecond) }()
	_ = a.Unlock()
	if err := <-done; err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	_ = b.Unlock()
}

// TestLock_AcrossProcesses holds the lock in a child process (flock(1)-free: the
// test binary itself) and checks this process sees it held.
func TestLock_AcrossProcesses(t *testing.T) {
	if dir := os.Getenv("HOSTLOCK_CHILD_DIR"); dir != "" {
		l := New(dir)
		if err := l.TryLock("child"); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		buf := make([]byte, 1)
		os.Stdin.Read(buf) // hold until the parent closes stdin
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLock_AcrossProcesses$")
	cmd.Env = append(os.Environ(), "HOSTLOCK_CHILD_DIR="+dir)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("child did not lock: %q %v", buf, err)
	}
	if err := New(dir).TryLock("parent"); !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "child") {
		t.Fatalf("TryLock while child holds = %v", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	l := New(dir)
	if err := l.TryLock("parent"); err != nil {
		t.Fatalf("TryLock after child exit: %v", err)
	}
	_ = l.Unlock()
}

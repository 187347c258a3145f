package flocks

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLock_TryLock(t *testing.T) {
	dir := t.TempDir()
	a, b := newLock(dir), newLock(dir)
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
	if h := Holder(lockPath(dir)); h != "deploy web-1" {
		t.Errorf("Holder = %q", h)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	if h := Holder(lockPath(dir)); h != "" {
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
	a, b := newLock(dir), newLock(dir)
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
	if dir := os.Getenv("FLOCKS_CHILD_DIR"); dir != "" {
		l := newLock(dir)
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
	cmd.Env = append(os.Environ(), "FLOCKS_CHILD_DIR="+dir)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("child did not lock: %q %v", buf, err)
	}
	if err := newLock(dir).TryLock("parent"); !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "child") {
		t.Fatalf("TryLock while child holds = %v", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	l := newLock(dir)
	if err := l.TryLock("parent"); err != nil {
		t.Fatalf("TryLock after child exit: %v", err)
	}
	_ = l.Unlock()
}

func lockPath(dir string) string { return filepath.Join(dir, "x.lock") }

func newLock(dir string) *Lock { return New(lockPath(dir), "x lock") }

// TestLock_HeldErrorNamesTheHolder: a second handle on the same file (another
// open file description, as another process would have) gets a *HeldError
// whose Holder is the first taker's name, read from errors.As, not the text.
func TestLock_HeldErrorNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	a := newLock(dir)
	if err := a.TryLock("deploy v2 by alice"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Unlock() })
	err := newLock(dir).TryLock("watchdog")
	var held *HeldError
	if !errors.As(err, &held) || held.Holder != "deploy v2 by alice" || held.Path != lockPath(dir) || held.What != "x lock" {
		t.Fatalf("TryLock = %#v, want a *HeldError naming the holder", err)
	}
	if err.Error() != "x lock is held by deploy v2 by alice" {
		t.Errorf("message %q", err.Error())
	}
}

func TestLock_StaleHolderFile(t *testing.T) {
	cases := []struct {
		name, holderFile string
		wantHeldBy       string
	}{
		{"a crashed holder's name", "deploy v1 (crashed)\n", ""},
		{"empty", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(lockPath(dir)+HolderSuffix, []byte(tc.holderFile), 0o644); err != nil {
				t.Fatal(err)
			}
			if h := Holder(lockPath(dir)); h != tc.wantHeldBy {
				t.Errorf("Holder of a free lock with a stale holder file = %q, want free", h)
			}
			l := newLock(dir)
			if err := l.TryLock("agent (pid 1)"); err != nil {
				t.Fatalf("TryLock over a stale holder file: %v", err)
			}
			if h := Holder(lockPath(dir)); h != "agent (pid 1)" {
				t.Errorf("Holder = %q, want the new holder", h)
			}
			_ = l.Unlock()
			if _, err := os.Stat(lockPath(dir) + HolderSuffix); !os.IsNotExist(err) {
				t.Errorf("holder file left after Unlock: %v", err)
			}
		})
	}
}

// TestLock_HeldWithoutHolderFile: a holder that wrote no holder file is
// "another process".
func TestLock_HeldWithoutHolderFile(t *testing.T) {
	dir := t.TempDir()
	a := newLock(dir)
	if err := a.TryLock("x"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Unlock() })
	if err := os.Remove(lockPath(dir) + HolderSuffix); err != nil {
		t.Fatal(err)
	}
	var held *HeldError
	if err := newLock(dir).TryLock("y"); !errors.As(err, &held) || held.Holder != "another process" {
		t.Fatalf("TryLock = %v, want held by another process", err)
	}
}

// TestLock_UnwritableDir: a lock file that cannot be created is an error of
// its own, never ErrHeld (which would make callers wait or skip forever).
// Root ignores directory modes, so the parent is a regular file.
func TestLock_UnwritableDir(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(parent, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := New(filepath.Join(parent, "x.lock"), "x lock").TryLock("agent")
	if err == nil || errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "x lock") {
		t.Fatalf("TryLock in a non-directory = %v, want an error naming the lock, not ErrHeld", err)
	}
}

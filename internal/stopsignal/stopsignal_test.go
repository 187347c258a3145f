package stopsignal

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
)

func TestGone(t *testing.T) {
	open := func(t *testing.T) (r, w *os.File) {
		t.Helper()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		return r, w
	}
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tests := []struct {
		name string
		fd   func(t *testing.T) int
		want bool
	}{
		{"a pipe someone reads", func(t *testing.T) int { _, w := open(t); return int(w.Fd()) }, false},
		{"a pipe whose reader closed", func(t *testing.T) int { r, w := open(t); r.Close(); return int(w.Fd()) }, true},
		{"a file", func(*testing.T) int { return int(f.Fd()) }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Gone(tc.fd(t)); got != tc.want {
				t.Fatalf("Gone = %v, want %v", got, tc.want)
			}
		})
	}
}

// A SIGPIPE from a connection of the command's own (its output still read)
// does not stop it; one whose output is gone does, and so does SIGTERM.
func TestWatch(t *testing.T) {
	tests := []struct {
		name    string
		signals []os.Signal
		gone    bool
		want    string
	}{
		{"SIGPIPE, output read, then SIGTERM", []os.Signal{syscall.SIGPIPE, syscall.SIGTERM}, false, "terminated signal received"},
		{"SIGPIPE, output gone", []os.Signal{syscall.SIGPIPE, syscall.SIGTERM}, true, "broken pipe signal received"},
		{"interrupt", []os.Signal{os.Interrupt}, false, "interrupt signal received"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			ch := make(chan os.Signal, len(tc.signals))
			for _, s := range tc.signals {
				ch <- s
			}
			watch(ctx, cancel, ch, func() bool { return tc.gone }) // returns once it cancelled
			cause := context.Cause(ctx)
			if cause == nil || cause.Error() != tc.want || !errors.Is(cause, context.Canceled) {
				t.Fatalf("cause = %v, want %q matching context.Canceled", cause, tc.want)
			}
		})
	}
}

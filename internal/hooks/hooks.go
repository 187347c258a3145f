// Package hooks runs an operator's commands around a deploy — pre_deploy,
// post_deploy, on_failure, on_rollback — enough to post to a chat or tag a
// release. A hook is an argv list run without a shell (no config string ever
// reaches one), with MYTHEX_VERSION, MYTHEX_RESULT and MYTHEX_HOSTS in its
// environment, bounded by a timeout after which it is interrupted and then
// killed.
package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Environment variables a hook gets.
const (
	// EnvVersion is the version being deployed (or rolled back to).
	EnvVersion = "MYTHEX_VERSION"
	// EnvResult is "pending" for pre_deploy, then "ok", "failed" or
	// "rolled_back".
	EnvResult = "MYTHEX_RESULT"
	// EnvHosts is the fleet's host names, comma-separated.
	EnvHosts = "MYTHEX_HOSTS"
	// EnvHook is the hook's name, e.g. pre_deploy.
	EnvHook = "MYTHEX_HOOK"
)

// DefaultTimeout bounds a hook when the config gives none.
const DefaultTimeout = 30 * time.Second

// outputMax caps the output kept of a hook for its error message.
const outputMax = 4 << 10

// Event is what a hook is told.
type Event struct {
	// Hook is the hook's name (pre_deploy, post_deploy, on_failure,
	// on_rollback).
	Hook string
	// Version is the version deployed.
	Version string
	// Result is pending, ok, failed or rolled_back.
	Result string
	// Hosts are the fleet's host names.
	Hosts []string
}

// Error is a hook that failed: it exited non-zero, could not start, or ran
// out of time. Output holds the end of what it printed.
type Error struct {
	Hook     string
	Argv     []string
	ExitCode int
	TimedOut bool
	Output   string
	Err      error
}

// Error says which hook failed and how, with the end of its output.
func (e *Error) Error() string {
	var why string
	switch {
	case e.TimedOut:
		why = "ran out of time"
	case e.ExitCode > 0:
		why = fmt.Sprintf("exited %d", e.ExitCode)
	default:
		why = e.Err.Error()
	}
	s := fmt.Sprintf("hook %s (%s) %s", e.Hook, strings.Join(e.Argv, " "), why)
	if out := strings.TrimSpace(e.Output); out != "" {
		s += ": " + out
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Run runs argv (no shell: argv[0] is looked up in PATH) for ev, within
// timeout (0: DefaultTimeout): on timeout it gets SIGTERM, and SIGKILL 2 s
// later. Its stdout and stderr go to out (may be nil) and the last 4 KiB are
// kept for the error. An empty argv is no hook: nil. Errors: *Error.
func Run(ctx context.Context, argv []string, ev Event, timeout time.Duration, out *bytes.Buffer) error {
	if len(argv) == 0 {
		return nil
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(),
		EnvVersion+"="+ev.Version, EnvResult+"="+ev.Result, EnvHosts+"="+strings.Join(ev.Hosts, ","), EnvHook+"="+ev.Hook)
	var buf tail
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if out != nil {
		out.Write(buf.b)
	}
	if err == nil {
		return nil
	}
	he := &Error{Hook: ev.Hook, Argv: argv, Output: string(buf.b), Err: err, ExitCode: -1}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		he.TimedOut = true
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		he.ExitCode = ee.ExitCode()
	}
	return he
}

// tail keeps the last outputMax bytes written.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > outputMax {
		t.b = append([]byte(nil), t.b[len(t.b)-outputMax:]...)
	}
	return len(p), nil
}

// Package stopsignal is how a mythex command learns it must stop: Ctrl-C
// (SIGINT) and SIGTERM stop it; SIGPIPE stops it only when its own output
// (stdout or stderr) is a pipe or socket nobody reads any more — `mythex
// demo | head` must still stop what it started.
//
// A process that asks for SIGPIPE (os/signal.Notify) receives it for every
// write to a broken pipe or connection, not only on stdout: for a server
// such as `mythex agent`, a client that abandons a request mid-answer (a
// timeout, a cancelled call) raises one. Taken as "stop", that stopped the
// agent and, with it, its host's services.
package stopsignal

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// stopError is the context's cause: which signal stopped it. It matches
// context.Canceled, as os/signal.NotifyContext's does.
type stopError string

func (e stopError) Error() string { return string(e) }

// Is matches context.Canceled.
func (e stopError) Is(target error) bool { return target == context.Canceled }

// NotifyContext returns a context that ends on SIGINT or SIGTERM, or on
// SIGPIPE when stdout or stderr is a broken pipe or socket; its cause names
// the signal. stop releases the signals and ends the context.
func NotifyContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE)
	go watch(ctx, cancel, ch, func() bool { return Gone(1, 2) })
	return ctx, func() {
		signal.Stop(ch)
		cancel(context.Canceled)
	}
}

// watch cancels ctx at the first signal on ch that means stop: any but
// SIGPIPE, and SIGPIPE when outputGone says so. It returns when ctx ends.
func watch(ctx context.Context, cancel context.CancelCauseFunc, ch <-chan os.Signal, outputGone func() bool) {
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-ch:
			if s == syscall.SIGPIPE && !outputGone() {
				continue // a broken connection or pipe of the command's own, not its output
			}
			cancel(stopError(s.String() + " signal received"))
			return
		}
	}
}

// Gone reports whether any of fds is a pipe or socket whose other end is
// closed (poll reports POLLERR or POLLHUP on it). Files and terminals are
// never gone.
func Gone(fds ...int) bool {
	pfds := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		pfds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT}
	}
	n, err := unix.Poll(pfds, 0)
	if err != nil || n == 0 {
		return false
	}
	for _, p := range pfds {
		if p.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}

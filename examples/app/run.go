package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
)

// run is the whole program behind main: `app check URL`, or serve. It returns
// the exit code; logs and errors go to stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "check" {
		return runCheck(ctx, args[1:], stderr)
	}
	c, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "app:", err)
		return exitUsage
	}
	sigs := []os.Signal{syscall.SIGTERM, os.Interrupt}
	if c.IgnoreSIGTERM {
		// From the first instant, so not even the start delay dies of it.
		signal.Ignore(syscall.SIGTERM)
		sigs = []os.Signal{os.Interrupt}
	}
	// Catch the signals from the first instant too, not only once drain.Serve
	// has subscribed: a SIGTERM between listening and Serve then starts the
	// drain (through ctx) instead of killing the process with connections in
	// its accept queue, and one during the start delay stops the boot.
	ctx, stop := signal.NotifyContext(ctx, sigs...)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	return serve(ctx, c, deps{listen: net.Listen, log: log, signals: sigs})
}

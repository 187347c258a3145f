// Package sampleapp is mythex's sample HTTP service behind examples/app and
// `mythex sample-app`: it reports who answered (service, version, host), drains
// on SIGTERM with package drain, and can be told to boot slowly, crash, ignore
// SIGTERM or stay unhealthy, so that load balancer, deploy and publish tests and
// the demo have something real to run.
package sampleapp

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

// Run is the whole sample app: `app check URL`, or serve (flags and
// MYTHEX_APP_* variables, read through getenv, as in examples/app/README.md).
// It returns the process exit code: 0 drained and shut down, 1 could not
// listen or crashed on purpose, 2 bad input, or the --crash-exit-code. Logs and
// errors go to stderr. It catches SIGTERM and SIGINT itself.
func Run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	return RunAs(ctx, "app", args, getenv, stderr)
}

// RunAs is Run with the program name its usage text shows (e.g. "mythex
// sample-app" when mythex runs it as a subcommand).
func RunAs(ctx context.Context, prog string, args []string, getenv func(string) string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "check" {
		return runCheck(ctx, args[1:], stderr)
	}
	c, err := parseConfig(prog, args, getenv, stderr)
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

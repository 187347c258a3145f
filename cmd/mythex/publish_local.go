package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/platform/fly"
	"github.com/mythex/mythex/internal/platform/local"
)

func newPublishLocalPlatformCmd() *cobra.Command {
	var (
		stateDir     string
		listen       string
		maxEvents    int
		stopTimeout  time.Duration
		restartDelay time.Duration
	)
	cmd := &cobra.Command{
		Use:   "local-platform [--state-dir DIR] [--listen 127.0.0.1:0]",
		Short: "Run the embedded machines platform: apps' machines as supervised processes",
		Long: `local-platform runs the local machines platform until interrupted: each
machine is a process (an "image" is an executable path) under a supervisor with
Fly's restart policies (no, always, on-failure + max_retries), an event list
bounded to --max-events per machine (newest first: launch, start, exit with exit
code, signal, requested stop, restarting and restart count, update, suspend,
resume), and its own loopback port handed to the process in $MYTHEX_APP_LISTEN
and $PORT. Its API is the subset of the Fly Machines API v1 mythex uses, on a
loopback address with a bearer token; the address and the token file are
written into the state dir, where ` + "`mythex publish`" + ` finds them.

Machines and their logs live under <state-dir>/local-platform/apps/<app>/.
Stopping the daemon stops its machines; starting it again brings back the ones
that were running.`,
		Example: `  mythex publish local-platform --state-dir .mythex &
  mythex publish --app api --image "$(command -v mythex)" --arg sample-app
  tail -f .mythex/local-platform/apps/api/*.log`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !auth.IsLoopback(listen) {
				return usagef("--listen %s: the local platform's API binds to loopback only (e.g. 127.0.0.1:4280)", listen)
			}
			if maxEvents < 1 {
				return usagef("--max-events %d: keep at least 1", maxEvents)
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			if err := os.MkdirAll(stateDir, 0o700); err != nil {
				return err
			}
			sup, err := local.New(local.Options{StateDir: filepath.Join(stateDir, local.MachinesDir), MaxEvents: maxEvents,
				StopTimeout: stopTimeout, RestartDelay: restartDelay, Logger: log})
			if err != nil {
				if errors.Is(err, local.ErrLocked) {
					return withCode(exitFailed, fmt.Errorf("%w: is another `mythex publish local-platform` running on %s?", err, stateDir))
				}
				return err
			}
			defer sup.Close()
			err = local.Serve(cmd.Context(), stateDir, listen, func(token string) http.Handler { return fly.NewHandler(sup, token) }, func(e local.Endpoint) {
				log.Info("local platform serving", "api", e.URL, "state_dir", stateDir, "max_events", maxEvents)
				fmt.Fprintf(cmd.OutOrStdout(), "local platform API on %s (state dir %s)\n", e.URL, stateDir)
			})
			if err != nil {
				return err
			}
			log.Info("local platform stopping its machines")
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&stateDir, "state-dir", defaultStateDir(), "state dir shared with \"mythex publish\" ($MYTHEX_STATE_DIR)")
	fs.StringVar(&listen, "listen", "127.0.0.1:0", "loopback address of the platform's API (port 0: any free port)")
	fs.IntVar(&maxEvents, "max-events", 5, "events kept per machine, newest first (the write-up's platform kept 5)")
	fs.DurationVar(&stopTimeout, "stop-timeout", 30*time.Second, "grace after SIGTERM before SIGKILL when a machine is stopped (the sample app drains for 15s, then shuts down within 10s)")
	fs.DurationVar(&restartDelay, "restart-delay", 200*time.Millisecond, "pause before the platform restarts a machine that exited")
	return cmd
}

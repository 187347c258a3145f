package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/agent"
	"github.com/mythex/mythex/internal/termui"
)

type agentBootstrapFlags struct {
	stateDir     string
	runtime      string
	host         string
	timeout      time.Duration
	startTimeout time.Duration
	asJSON       bool
	dockerHost   string
	dockerLabels []string
}

func newAgentBootstrapCmd() *cobra.Command {
	var f agentBootstrapFlags
	cmd := &cobra.Command{
		Use:   "bootstrap --state-dir DIR",
		Short: "Make the host's current definition run, under the host lock: what a server runs at boot",
		Long: `bootstrap is what a server runs at boot. It takes the host lock — the same
one a deploy lease and each watchdog round take, waiting while one of them
holds it — starts every service of the current published definition in
--state-dir, waits until each answers its health check, and releases the lock.
Services already running the current definition are left alone. It never
writes the definition: it runs what was published.

It refuses to run while an agent runs on the same state directory: the agent
keeps its definition running itself (start it with --bootstrap to do this
first thing).

Wiring into systemd: examples/systemd/ has the units and says which to use.

Exit status: 0 every service runs and answers its health check (or nothing
has been published to this host yet); 1 a service did not come up, the lock
stayed held past --timeout, or an agent runs on the state directory; 2 bad
input.`,
		Example: `  mythex agent bootstrap --state-dir /var/lib/mythex
  mythex agent bootstrap --state-dir ./state/web-1 --timeout 2m --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgentBootstrap(cmd.Context(), f, os.Stdout)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.stateDir, "state-dir", "", "the agent's state directory (required)")
	fl.StringVar(&f.runtime, "runtime", "process", "what runs the services: process or docker")
	fl.StringVar(&f.dockerHost, "docker-host", "", "Docker engine address with --runtime docker (default $DOCKER_HOST or the local socket)")
	fl.StringSliceVar(&f.dockerLabels, "docker-label", nil, "with --runtime docker: KEY=VALUE labels that scope the host's containers (as the agent's)")
	fl.StringVar(&f.host, "host", "", "this host's name, for logs (default: the machine's host name)")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "give up after this long (waiting for the lock and for the services)")
	fl.DurationVar(&f.startTimeout, "start-timeout", 0, "how long services may take to turn healthy (default: from their healthchecks)")
	fl.BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	return cmd
}

func runAgentBootstrap(ctx context.Context, f agentBootstrapFlags, out io.Writer) error {
	if f.stateDir == "" {
		return usagef("--state-dir is required: the agent's state directory, e.g. --state-dir /var/lib/mythex")
	}
	if f.timeout <= 0 {
		return usagef("--timeout %v: give how long the bootstrap may take, e.g. 5m", f.timeout)
	}
	if f.host == "" {
		f.host, _ = os.Hostname()
	}
	stateDir, err := filepath.Abs(f.stateDir)
	if err != nil {
		return usagef("--state-dir: %v", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	release, err := agent.ClaimStateDir(stateDir, "bootstrap")
	if err != nil {
		return fmt.Errorf("%w; an agent keeps its definition running itself (mythex agent --bootstrap)", err)
	}
	defer func() { _ = release() }()
	rt, err := newRuntime(ctx, agentFlags{runtime: f.runtime, host: f.host, dockerHost: f.dockerHost, dockerLabels: f.dockerLabels}, stateDir, log)
	if err != nil {
		return err
	}
	defer rt.Close()
	// The leases stay for the agent: it can put a recovered host back into
	// the load balancer, the bootstrap cannot.
	a, err := agent.New(agent.Config{Host: f.host, StateDir: stateDir, Runtime: rt, RuntimeName: f.runtime, Logger: log, StartTimeout: f.startTimeout, KeepLeasesOnDisk: true})
	if err != nil {
		return err
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	res, err := a.BootstrapResult(ctx, f.host)
	if f.asJSON {
		if jerr := termui.WriteJSON(out, res); jerr != nil {
			return jerr
		}
		if err != nil {
			return silentExit(exitFailed)
		}
		return nil
	}
	if err != nil {
		return withCode(exitFailed, err)
	}
	termui.WriteBootstrap(out, res)
	return nil
}

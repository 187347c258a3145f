package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/agent"
	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/fleetlb"
	"github.com/mythex/mythex/internal/lbport/haproxy/deploylb"
	"github.com/mythex/mythex/internal/runtime"
	"github.com/mythex/mythex/internal/runtime/docker"
	"github.com/mythex/mythex/internal/runtime/process"
	"github.com/mythex/mythex/internal/timing"
	"github.com/mythex/mythex/internal/transport"
	"github.com/mythex/mythex/internal/watchdog"
)

// agentTokenEnv holds the agents' bearer token when no token file is given.
const agentTokenEnv = "MYTHEX_AGENT_TOKEN"

// agentFlags are the flags of `mythex agent`.
type agentFlags struct {
	file         string
	host         string
	stateDir     string
	listen       string
	tokenFile    string
	runtime      string
	allowRemote  bool
	tlsCert      string
	tlsKey       string
	clientCA     string
	logFormat    string
	lbTokenFile  string
	noLB         bool
	stopOnExit   bool
	startTimeout time.Duration

	noWatchdog       bool
	watchdogInterval time.Duration
	watchdogFailures int
	bootstrap        bool
	dockerHost       string
	dockerLabels     []string
}

func newAgentCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent --state-dir DIR [-f mythex.yml --host NAME] [--listen ADDR]",
		Short: "Run the host agent: the one definition, the host lock, services, API for deploys",
		Long: `agent runs on every server of the fleet. It keeps the host's published
definition (current, previous, last known good) in --state-dir, owns the host
lock that deploys and the bootstrap share, starts and stops the services
through a runtime, and serves an authenticated API that mythex deploy drives.

The API binds to loopback, and every request needs the bearer token from
--token-file or $` + agentTokenEnv + `. Deployers on other machines reach it
through SSH (hosts[].ssh in mythex.yml: the agent stays on loopback), or over
TLS 1.3 with client certificates (--tls-cert, --tls-key, --client-ca; make them
with mythex certs). Plain HTTP beyond loopback needs --insecure-plaintext and
warns at every start: the token lets whoever holds it run programs here.

With -f and --host, the agent takes its listen address (hosts[].agent), its
load balancer target and the load balancer's admin API from mythex.yml: if a
deploy dies mid-way, the agent returns the host to its last known good
definition and registers it with the load balancer again.

Services keep running when the agent stops or restarts; a new agent adopts
them — and, through a marker in their environment, also the ones whose
records are missing; a service of its own it cannot account for is stopped.

A deploy's lease is kept in --state-dir: after an agent restart (even
SIGKILL) it is resumed and its clock goes on; when it runs out, the agent
returns the host to its last known good definition and registers it with the
load balancer again. mythex lease status / mythex lease break show and end
leases. The API token must have at least 16 bytes.

The watchdog checks every service of the current definition every
watchdog.interval (W, default 60s) and heals one only after
watchdog.failures_before_heal (K, default 4) consecutive failed checks. It
skips every round while a deploy lease or the bootstrap holds the host lock,
pauses during maintenance (mythex agent maintenance), heals only from the
published definition and never writes it. --bootstrap makes the current
definition run before anything else (what a server does at boot; see mythex
agent bootstrap).`,
		Example: `  # one host of the local example fleet (examples/local; the README starts all three and the LB)
  export ` + agentTokenEnv + `=$(openssl rand -hex 32)
  mythex agent -f examples/local/mythex.yml --host web-1 --state-dir state/web-1 --stop-services-on-exit

  # on a server
  openssl rand -hex 32 > /etc/mythex/agent-token   # once; give the deployer the same file
  export ` + agentTokenEnv + `=$(cat /etc/mythex/agent-token)
  mythex agent -f mythex.yml --host web-1 --state-dir /var/lib/mythex

  # by hand, without a fleet config, a faster watchdog
  mythex agent --host web-1 --state-dir ./state/web-1 --listen 127.0.0.1:9201 \
    --watchdog-interval 10s --watchdog-failures 4

  # services as containers (images built with: mythex image build)
  mythex agent -f examples/docker/mythex.yml --host web-1 --state-dir state/web-1 --runtime docker`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(cmd, f.logFormat)
			if err != nil {
				return err
			}
			return runAgent(cmd.Context(), f, log)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "fleet config (mythex.yml); gives the listen address, target and load balancer of --host")
	fl.StringVar(&f.host, "host", "", "this host's name (hosts[].name); default: the machine's host name")
	fl.StringVar(&f.stateDir, "state-dir", "", "directory for the definitions, the host lock and the runtime's state (required)")
	fl.StringVar(&f.listen, "listen", "", "API address (default hosts[].agent with -f, else 127.0.0.1:9201)")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the API's bearer token (default $"+agentTokenEnv+")")
	fl.StringVar(&f.runtime, "runtime", "process", "what runs the services: process (child processes) or docker (containers through the Docker Engine API)")
	fl.StringVar(&f.dockerHost, "docker-host", "", "Docker engine address for --runtime docker (default $DOCKER_HOST, else unix:///var/run/docker.sock)")
	fl.StringArrayVar(&f.dockerLabels, "docker-label", nil, "KEY=VALUE label put on every container and network of --runtime docker; the agent then sees only containers carrying it (repeatable; e.g. two fleets on one engine)")
	fl.BoolVar(&f.allowRemote, "insecure-plaintext", false, "serve plain HTTP on a --listen address that is not loopback (the token then crosses the network in clear; prefer SSH or --tls-cert)")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "old name of --insecure-plaintext")
	_ = fl.MarkDeprecated("allow-remote", "use --insecure-plaintext (or SSH, or --tls-cert with --client-ca)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "serve TLS 1.3 with this certificate (PEM; mythex certs issue --server); needs --tls-key and --client-ca")
	fl.StringVar(&f.tlsKey, "tls-key", "", "the key of --tls-cert (PEM)")
	fl.StringVar(&f.clientCA, "client-ca", "", "CA whose client certificates deployers must present (PEM; mythex certs init)")
	fl.StringVar(&f.lbTokenFile, "lb-token-file", "", "file holding the load balancer's admin token (default load_balancer.admin_token_file or $"+lbTokenEnv+")")
	fl.BoolVar(&f.noLB, "no-lb", false, "do not talk to the load balancer, even with -f")
	fl.BoolVar(&f.stopOnExit, "stop-services-on-exit", false, "stop every service when the agent exits (demos and tests; servers keep them running)")
	fl.DurationVar(&f.startTimeout, "start-timeout", 0, "how long a start may wait for services to turn healthy (default: from their healthchecks)")
	fl.BoolVar(&f.noWatchdog, "no-watchdog", false, "run without the watchdog (nothing heals crashed services)")
	fl.DurationVar(&f.watchdogInterval, "watchdog-interval", 0, "W, the time between watchdog rounds (default watchdog.interval with -f, else 60s)")
	fl.IntVar(&f.watchdogFailures, "watchdog-failures", 0, "K, consecutive failed checks before a heal (default watchdog.failures_before_heal with -f, else 4)")
	fl.BoolVar(&f.bootstrap, "bootstrap", false, "first make the current definition run, under the host lock (use under systemd with the process runtime)")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format: text or json (as mythex lb)")
	_ = cmd.MarkFlagRequired("state-dir")
	cmd.AddCommand(newAgentBootstrapCmd(), newAgentMaintenanceCmd())
	return cmd
}

func runAgent(ctx context.Context, f agentFlags, log *slog.Logger) error {
	token, err := auth.LoadAdminToken(f.tokenFile, agentTokenEnv, "--token-file")
	if err != nil {
		return usagef("agent API token: %v", err)
	}
	var rec agent.Recovery
	if f.host == "" {
		f.host, _ = os.Hostname()
	}
	policy := watchdog.Policy{}
	drainMax := fleet.Default().Drain.Max
	if f.file != "" {
		cfg, err := loadFleet(f.file)
		if err != nil {
			return err
		}
		policy = watchdog.PolicyFrom(cfg.Watchdog)
		drainMax = cfg.Drain.Max
		h, ok := cfg.Host(f.host)
		if !ok {
			return usagef("--host %q is not in %s (hosts: %s)", f.host, f.file, strings.Join(cfg.HostNames(), ", "))
		}
		if f.listen == "" {
			f.listen = h.Agent
		}
		if !f.noLB {
			d, ref, err := deploylb.RecoveryDriver(ctx, cfg, h, func() (string, error) {
				return auth.LoadToken(firstNonEmpty(f.lbTokenFile, cfg.AdminTokenPath()), lbTokenEnv)
			})
			if err != nil {
				return usagef("load balancer: %v (or run with --no-lb)", err)
			}
			if d != nil {
				rec = agent.Recovery{LB: d, TargetID: ref.ID, TargetAddress: ref.Address}
			}
		}
		if rec.LB != nil && cfg.LoadBalancer.Kind != fleet.KindHAProxy {
			// The recovery keeps deploy.min_in_service as a deploy does.
			if rec.Capacity, err = agent.CapacityFrom(&cfg.Config, h.Name, func(h fleet.Host) lbport.TargetRef { return fleetlb.Ref(cfg.LoadBalancer, h) }); err != nil {
				return usagef("%v", err)
			}
		}
	}
	if f.listen == "" {
		f.listen = "127.0.0.1:9201"
	}
	var tlsConf *tls.Config
	if f.tlsCert != "" || f.tlsKey != "" || f.clientCA != "" {
		c, err := transport.ServerTLS(f.tlsCert, f.tlsKey, f.clientCA)
		if err != nil {
			return usagef("%v", err)
		}
		tlsConf = c
	}
	switch {
	case auth.IsLoopback(f.listen) || tlsConf != nil:
	case f.allowRemote:
		fmt.Fprintf(os.Stderr, "warning: the agent API serves plain HTTP on %s (--insecure-plaintext): its token, which can start any program here, crosses the network in clear; use SSH (hosts[].ssh) or --tls-cert/--tls-key/--client-ca\n", f.listen)
	default:
		return usagef("--listen %s is not a loopback address; the agent API can start and stop services: keep it on loopback and reach it over SSH (hosts[].ssh), serve TLS with client certificates (--tls-cert, --tls-key, --client-ca), or pass --insecure-plaintext on a network you trust", f.listen)
	}
	stateDir, err := filepath.Abs(f.stateDir)
	if err != nil {
		return usagef("--state-dir: %v", err)
	}
	var wdPolicy *watchdog.Policy
	if !f.noWatchdog {
		policy = policy.Override(f.watchdogInterval, f.watchdogFailures)
		if err := policy.Validate(); err != nil {
			return usagef("--watchdog-interval/--watchdog-failures: %v", err)
		}
		wdPolicy = &policy
		if patience, ok := timing.WatchdogPatience(policy.FailuresBeforeHeal, policy.Interval, drainMax); !ok {
			log.Warn("watchdog-patience fails: (failures_before_heal − 1) × interval is shorter than drain.max, so a service draining for a deploy would look dead to a watchdog that did not respect the host lock; mythex check explains",
				"failures_before_heal", policy.FailuresBeforeHeal, "interval", policy.Interval, "patience", patience, "drain_max", drainMax)
		}
	}
	release, err := agent.ClaimStateDir(stateDir, "agent")
	if err != nil {
		return err
	}
	defer func() { _ = release() }()
	rt, err := newRuntime(ctx, f, stateDir, log)
	if err != nil {
		return err
	}
	defer rt.Close()
	a, err := agent.New(agent.Config{
		Host: f.host, StateDir: stateDir, Runtime: rt, RuntimeName: f.runtime,
		Logger: log, Recovery: rec, StartTimeout: f.startTimeout, Watchdog: wdPolicy,
	})
	if err != nil {
		return err
	}
	if err := a.ListenAndServe(ctx, agent.ServeOptions{Addr: f.listen, Token: token, TLS: tlsConf, Bootstrap: f.bootstrap}); err != nil {
		_ = a.Close()
		return err
	}
	a.Shutdown(f.stopOnExit)
	return nil
}

// newRuntime opens the runtime f.runtime names on the agent's state
// directory. An unreachable Docker engine is bad input (exit 2): nothing ran.
func newRuntime(ctx context.Context, f agentFlags, stateDir string, log *slog.Logger) (runtime.Runtime, error) {
	switch f.runtime {
	case "process":
		return process.New(process.Options{StateDir: filepath.Join(stateDir, "runtime"), Logger: log})
	case "docker":
		labels, err := keyValues("--docker-label", f.dockerLabels)
		if err != nil {
			return nil, err
		}
		d, err := docker.Open(ctx, f.dockerHost, docker.Options{StateDir: filepath.Join(stateDir, "runtime"), Host: f.host, Labels: labels, Logger: log})
		if errors.Is(err, docker.ErrNoEngine) {
			return nil, usagef("--runtime docker: %v (is the Docker daemon running? see --docker-host)", err)
		} else if err != nil {
			return nil, usagef("--runtime docker: %v", err)
		}
		return d, nil
	}
	return nil, usagef("--runtime %q: the runtimes are: process, docker", f.runtime)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

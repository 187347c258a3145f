package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/history"
	"github.com/mythex/mythex/internal/hooks"
	"github.com/mythex/mythex/internal/probe"
	"github.com/mythex/mythex/internal/report"
	"github.com/mythex/mythex/internal/runtime/docker"
	"github.com/mythex/mythex/internal/termui"
	"github.com/mythex/mythex/internal/timing"
)

type deployFlags struct {
	file           string
	version        string
	asJSON         bool
	agentTokenFile string
	lbTokenFile    string
	holder         string
	targetServices []string
	allowDowntime  bool
	// report, measureURL and rate are --report, --measure and --rate.
	report     string
	measureURL string
	rate       float64
	rateSet    bool
	// insecurePlaintext allows plain HTTP to agents beyond loopback.
	insecurePlaintext bool
	// rollback: version is --to of mythex rollback ("" for the fleet's
	// last good), and the hosts publish their stored definitions of it.
	rollback bool
}

func newDeployCmd() *cobra.Command {
	var f deployFlags
	cmd := &cobra.Command{
		Use:   "deploy -f mythex.yml --version V",
		Short: "Roll a new version across the fleet, one host at a time, with a drain handshake",
		Long: `deploy rolls --version across the hosts of mythex.yml in order, deploy.batch_size
at a time. Before each batch it looks again at every host already deployed,
and asks the load balancer whether enough targets outside the batch are
healthy and in rotation (deploy.min_in_service; it waits, bounded, naming the
hosts that are out). Then, for each host of the batch:

  lease    take the host lease (and with it the host lock the watchdog and
           the bootstrap share); it is held until the whole fleet is verified
  publish  publish the one definition (deploy.compose) at the new version;
           the current one becomes previous, nothing is deleted
  drain    deregister the target and/or flip its health check
           (deploy.drain_mode), then wait until the load balancer REPORTS it
           out of rotation with no request in flight (at most drain.max)
  stop     stop the old services within their stop grace period
  start    start the new services; wait until each answers its health check
  healthy  put the target back; wait until the load balancer reports it healthy
  verify   look twice: every service of deploy.verify must stay up — the same
           instance, no exit — for deploy.min_healthy_time with the load
           balancer reporting the target healthy throughout, then answer
           through the load balancer at the new version

After the last batch every host is verified again (the sweep); only then is
the new version recorded as each host's last known good (release).

A host failing any step is rolled back to its previous definition (restored
byte for byte) and verified. If other hosts were already moved, or a recheck
or the sweep fails, the whole fleet is rolled back, batch by batch, with the
same drain handshake and verification. Every load balancer change is fenced
by the host's lease: a deploy whose lease lapsed (it was frozen, say)
changes nothing more, and the agents return their hosts to their last good
version by themselves. Calls to agents and the load balancer that fail for a
moment (a refused connection) are retried, bounded; every wait prints what
it waits for at least every 2s. A closed stdout (mythex deploy | head) only
drops output; Ctrl-C or SIGTERM rolls back what was changed.

--measure URL runs the prober (as mythex measure does) through the deploy,
from a moment before it to a tail after it, at --rate requests per second:
a deploy that succeeds but lets a request reach nothing exits 1.
--report FILE.html writes the deploy as one self-contained HTML page (its
phases, the load balancer's view of each target, and with --measure the
requests by outcome, versions answering and latency, second by second).
With --json the prober's seconds join the event stream as
{"kind":"probe_second",...} lines, and its summary goes to stderr as
{"kind":"probe","report":{...}} (stdout still ends with the result).

Tokens: the agents' from --agent-token-file or $` + agentTokenEnv + `, the load
balancer's from --lb-token-file, load_balancer.admin_token_file or $` + lbTokenEnv + `.
Agents are reached over SSH (hosts[].ssh), TLS (agent_tls), loopback, or plain
HTTP beyond loopback with --insecure-plaintext; every host is connected before
anything changes, and a refused host key is exit 2.

Exit status: 0 deployed and verified; 1 a host failed or the fleet did not
verify (the message says what was rolled back), or the fleet had too few
targets in service to start; 2 bad input (the config, a deploy.verify or
target service missing from deploy.compose, a missing executable or image),
an unreachable agent or load balancer, or another deploy in progress —
nothing was changed.`,
		Example: `  mythex deploy -f examples/local/mythex.yml --version v2
  mythex deploy -f mythex.yml --version v2 --measure http://127.0.0.1:8080/ --rate 200 --report deploy.html
  mythex deploy -f mythex.yml --version "$(git rev-parse --short HEAD)" --json > deploy-events.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.rateSet = cmd.Flags().Changed("rate")
			if err := checkMeasureFlags(f); err != nil {
				return err
			}
			cfg, err := fleet.Load(f.file)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("target-service") {
				f.targetServices = nil // the fleet's deploy.target_services
			}
			// Ctrl-C and SIGTERM stop the deploy (which rolls back what it
			// changed); a closed stdout (SIGPIPE, mythex deploy | head) does
			// not: output is dropped and the deploy goes on.
			ctx, stop := signal.NotifyContext(context.WithoutCancel(cmd.Context()), os.Interrupt, syscall.SIGTERM)
			defer stop()
			hk := hooks.ForDeploy(cfg, f.version, os.Stderr)
			if err := hk.Pre(ctx); err != nil {
				return withCode(exitBadUse, err)
			}
			res, err := runDeploy(ctx, cfg, f, &termui.DropWriter{W: os.Stdout}, os.Stderr)
			hk.After(ctx, res, err)
			return deployExit(res, err)
		},
	}
	fl := cmd.Flags()
	f.addCommonFlags(fl)
	fl.StringVar(&f.version, "version", "", "version to deploy (required): reaches the services as MYTHEX_VERSION")
	fl.StringVar(&f.holder, "holder", "", "who deploys, shown in leases (default: deploy V by $USER)")
	fl.StringSliceVar(&f.targetServices, "target-service", nil, "services the load balancer routes to, flipped to 503 in health drain mode (default deploy.target_services of mythex.yml)")
	fl.StringVar(&f.report, "report", "", "write an HTML report of the deploy to this file (self-contained, opens offline)")
	fl.StringVar(&f.measureURL, "measure", "", "probe this URL through the deploy and count the requests that reached nothing (e.g. the load balancer's listener)")
	fl.Float64Var(&f.rate, "rate", 200, "with --measure: requests per second")
	_ = cmd.MarkFlagRequired("version")
	return cmd
}

// addCommonFlags adds the flags deploy and rollback share: the fleet, the
// output, the tokens, the transport and the capacity override.
func (f *deployFlags) addCommonFlags(fl *pflag.FlagSet) {
	fl.StringVarP(&f.file, "file", "f", "mythex.yml", "fleet config")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON event per line, then the result")
	fl.StringVar(&f.agentTokenFile, "agent-token-file", "", "file holding the agents' token (default $"+agentTokenEnv+")")
	fl.StringVar(&f.lbTokenFile, "lb-token-file", "", "file holding the load balancer's admin token")
	fl.BoolVar(&f.allowDowntime, "allow-downtime", false, "go on even when a batch takes every host out of rotation (a single host, or deploy.batch_size ≥ hosts)")
	fl.BoolVar(&f.insecurePlaintext, "insecure-plaintext", false, "allow plain HTTP to agents beyond loopback (the token crosses the network in clear; prefer hosts[].ssh or agent_tls)")
}

// deployExit maps a deploy's outcome to mythex's exit codes.
func deployExit(res deploy.Result, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, deploy.ErrPreflight), errors.Is(err, deploy.ErrInProgress),
		errors.Is(err, fleet.ErrInvalid), errors.Is(err, definition.ErrInvalid), isUsageError(err):
		return withCode(exitBadUse, err)
	default:
		return withCode(exitFailed, err)
	}
}

// runDeploy resolves the definition for every host and runs the rolling
// deploy, writing progress to out and warnings to errOut.
func runDeploy(ctx context.Context, cfg *fleet.Loaded, f deployFlags, out, errOut io.Writer) (deploy.Result, error) {
	if !f.rollback {
		if err := definition.CheckVersion(f.version); err != nil {
			return deploy.Result{}, usagef("--version: %v", err)
		}
	}
	agentToken, err := auth.LoadToken(f.agentTokenFile, agentTokenEnv)
	if err != nil {
		return deploy.Result{}, usagef("agent token: %v", err)
	}
	var lbToken string
	// An ALB takes the AWS SDK's credentials; HAProxy's Runtime API has no token.
	if cfg.LoadBalancer.Kind != fleet.KindALB && cfg.LoadBalancer.Kind != fleet.KindHAProxy {
		if lbToken, err = auth.LoadToken(firstNonEmpty(f.lbTokenFile, cfg.AdminTokenPath()), lbTokenEnv); err != nil {
			return deploy.Result{}, usagef("load balancer token: %v", err)
		}
	}
	// The timing doctor's verdict, before anything is touched.
	for _, r := range timing.Evaluate(cfg.Config).Results {
		if !r.OK() {
			fmt.Fprintf(errOut, "warning: timing invariant %s fails: %s (see mythex check -f %s)\n", r.Name, r.Formula, cfg.Path)
		}
	}
	// Every agent is reached the same way for the whole deploy (SSH, TLS,
	// loopback), connected before anything changes.
	pool := newAgentPool(f.insecurePlaintext, errOut)
	defer pool.Close()
	build := func(ctx context.Context, version string) (deploy.Options, error) {
		return deployOptions(ctx, cfg, version, agentToken, lbToken, pool, errOut)
	}
	kind, verb := history.KindDeploy, "deploy"
	var o deploy.Options
	if f.rollback {
		var plan deploy.RollbackPlan
		if o, plan, err = deploy.ForRollback(ctx, cfg, f.version, agentToken, pool, build); err != nil {
			return deploy.Result{}, err
		}
		f.version, kind, verb = plan.Version, history.KindRollback, "rollback to"
		if !f.asJSON {
			fmt.Fprintf(out, "rolling the fleet back to %s (%s)\n", plan.Version, plan.Why)
		}
	} else if o, err = build(ctx, f.version); err != nil {
		return deploy.Result{}, err
	}
	holder := f.holder
	if holder == "" {
		holder = fmt.Sprintf("%s %s by %s", verb, f.version, auth.WhoAmI())
	}
	mode := termui.Plain
	switch {
	case f.asJSON:
		mode = termui.JSON
	case termui.IsTerminal(termui.Unwrap(out)):
		mode = termui.TTY
	}
	start := time.Now()
	if t0, ok := probe.StartFromEnv(start); ok {
		// Under `mythex measure --`: count seconds from the prober's second 0.
		start = t0
	}
	if mode == termui.JSON && f.measureURL != "" {
		// The prober's seconds and the deploy's events share the stream.
		out = termui.Locked(out)
	}
	r := termui.NewDeployRendererAt(out, mode, start)
	// Every deploy is recorded: its report now (--report) or later, from
	// the hosts' history (mythex history --report).
	rec := deployrec.New("mythex "+strings.Join(os.Args[1:], " "), nil)
	rec.SetFleet(cfg.Config)
	hosts := cfg.HostNames()
	rec.BeginDeploy("", f.version, hosts)
	o.Holder, o.Observer, o.AllowDowntime = holder, rec.Observe(r), f.allowDowntime
	if len(f.targetServices) > 0 {
		o.TargetServices = f.targetServices
	}
	o.ImageExists = docker.LocalImageExists
	d, err := deploy.New(o)
	if err != nil {
		r.Close()
		return deploy.Result{}, err
	}
	lm, err := startDeployLoad(ctx, cfg, f, rec, out)
	if err != nil {
		r.Close()
		return deploy.Result{}, err
	}
	began := time.Now()
	res, err := d.Run(ctx)
	rec.EndDeploy(res, err)
	probed := lm.Stop(ctx)
	rec.Close() // the recording is complete: history and --report keep the same one
	r.Close()
	timeline, terr := deployrec.Encode(rec.Recording())
	if terr != nil {
		fmt.Fprintf(errOut, "warning: the deploy's timeline is not kept (mythex history --report cannot draw it): %v\n", terr)
	}
	deploy.RecordHistory(ctx, kind, o.Hosts, holder, began, res, err, timeline, errOut)
	switch {
	case f.asJSON:
		b, _ := json.Marshal(res)
		fmt.Fprintf(out, "%s\n", b)
	case len(res.Hosts) > 0:
		termui.WriteDeploySummary(out, res, err)
	}
	if probed != nil {
		if f.asJSON {
			b, _ := json.Marshal(map[string]any{"kind": "probe", "report": probed})
			fmt.Fprintf(errOut, "%s\n", b)
		} else {
			fmt.Fprintf(out, "measured %s at %g req/s: %s\n", probed.URL, probed.Rate, deployrec.Judge(rec.Recording().Deploys[0]).Headline)
		}
	}
	if f.report != "" {
		progress := out
		if f.asJSON {
			progress = errOut
		}
		if werr := report.WriteFile(f.report, rec.Recording(), progress); werr != nil && err == nil {
			err = werr
		}
	}
	if err == nil && probed != nil && probed.ReachedNothing > 0 {
		err = withCode(exitFailed, fmt.Errorf("the deploy succeeded, but %d of %d requests to %s reached nothing", probed.ReachedNothing, probed.Requests, probed.URL))
	}
	return res, err
}

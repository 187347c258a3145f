package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
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
}

func newDeployCmd() *cobra.Command {
	var f deployFlags
	cmd := &cobra.Command{
		Use:   "deploy -f mythex.yml --version V",
		Short: "Roll a new version across the fleet, one host at a time, with a drain handshake",
		Long: `deploy rolls --version across the hosts of mythex.yml in order, deploy.batch_size
at a time. For each host:

  lease    take the host lease (and with it the host lock the watchdog and
           the bootstrap share)
  publish  publish the one definition (deploy.compose) at the new version;
           the current one becomes previous, nothing is deleted
  drain    deregister the target and/or flip its health check
           (deploy.drain_mode), then wait until the load balancer REPORTS it
           out of rotation with no request in flight (at most drain.max)
  stop     stop the old services within their stop grace period
  start    start the new services; wait until each answers its health check
  healthy  put the target back; wait until the load balancer reports it healthy
  verify   check every service of deploy.verify via the agent, and that
           requests through the load balancer reach the new version
  release  record the version as last known good; release the lease

A host failing any step is rolled back to its previous definition (restored
byte for byte), verified, and the rollout stops; the fleet keeps serving.
After the last host, every host is verified again.

Tokens: the agents' from --agent-token-file or $` + agentTokenEnv + `, the load
balancer's from --lb-token-file, load_balancer.admin_token_file or $` + lbTokenEnv + `.

Exit status: 0 deployed and verified; 1 a host failed (rolled back) or the
final verification failed; 2 bad input, an unreachable agent or load balancer,
or another deploy in progress — nothing was changed.`,
		Example: `  mythex deploy -f examples/local/mythex.yml --version v2
  mythex deploy -f mythex.yml --version "$(git rev-parse --short HEAD)" --json > deploy-events.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := fleet.Load(f.file)
			if err != nil {
				return err
			}
			hk := newDeployHooks(cfg, f.version, os.Stderr)
			if err := hk.pre(cmd.Context()); err != nil {
				return withCode(exitBadUse, err)
			}
			res, err := runDeploy(cmd.Context(), cfg, f, os.Stdout, os.Stderr)
			hk.after(cmd.Context(), res, err)
			return deployExit(res, err)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "mythex.yml", "fleet config")
	fl.StringVar(&f.version, "version", "", "version to deploy (required): reaches the services as MYTHEX_VERSION")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON event per line, then the result")
	fl.StringVar(&f.agentTokenFile, "agent-token-file", "", "file holding the agents' token (default $"+agentTokenEnv+")")
	fl.StringVar(&f.lbTokenFile, "lb-token-file", "", "file holding the load balancer's admin token")
	fl.StringVar(&f.holder, "holder", "", "who deploys, shown in leases (default: deploy V by $USER)")
	fl.StringSliceVar(&f.targetServices, "target-service", []string{"gateway"}, "services the load balancer routes to (flipped to 503 in health drain mode)")
	fl.BoolVar(&f.allowDowntime, "allow-downtime", false, "deploy even when a batch takes every host out of rotation (a single host, or deploy.batch_size ≥ hosts)")
	_ = cmd.MarkFlagRequired("version")
	return cmd
}

// deployExit maps a deploy's outcome to mythex's exit codes.
func deployExit(res deploy.Result, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, deploy.ErrPreflight), errors.Is(err, deploy.ErrInProgress),
		errors.Is(err, fleet.ErrInvalid), isUsageError(err):
		return withCode(exitBadUse, err)
	default:
		return withCode(exitFailed, err)
	}
}

// runDeploy resolves the definition for every host and runs the rolling
// deploy, writing progress to out and warnings to errOut.
func runDeploy(ctx context.Context, cfg *fleet.Loaded, f deployFlags, out, errOut io.Writer) (deploy.Result, error) {
	if err := definition.CheckVersion(f.version); err != nil {
		return deploy.Result{}, usagef("--version: %v", err)
	}
	agentToken, err := auth.LoadToken(f.agentTokenFile, agentTokenEnv)
	if err != nil {
		return deploy.Result{}, usagef("agent token: %v", err)
	}
	var lbToken string
	// An ALB takes the AWS SDK's credentials; HAProxy's Runtime API has no token.
	if cfg.LoadBalancer.Kind != fleet.KindALB && cfg.LoadBalancer.Kind != fleet.KindHAProxy {
		if lbToken, err = auth.LoadToken(firstNonEmpty(f.lbTokenFile, cfg.LoadBalancer.AdminTokenFile), lbTokenEnv); err != nil {
			return deploy.Result{}, usagef("load balancer token: %v", err)
		}
	}
	// The timing doctor's verdict, before anything is touched.
	for _, r := range timing.Evaluate(cfg.Config).Results {
		if !r.OK() {
			fmt.Fprintf(errOut, "warning: timing invariant %s fails: %s (see mythex check -f %s)\n", r.Name, r.Formula, cfg.Path)
		}
	}
	o, err := deployOptions(ctx, cfg, f.version, agentToken, lbToken, errOut)
	if err != nil {
		return deploy.Result{}, err
	}
	holder := f.holder
	if holder == "" {
		holder = fmt.Sprintf("deploy %s by %s", f.version, whoAmI())
	}
	mode := termui.Plain
	switch {
	case f.asJSON:
		mode = termui.JSON
	case isTerminal(out):
		mode = termui.TTY
	}
	start := time.Now()
	if t0, ok := measureStart(start); ok {
		// Under `mythex measure --`: count seconds from the prober's second 0.
		start = t0
	}
	r := termui.NewDeployRendererAt(out, mode, start)
	o.Holder, o.TargetServices, o.Observer, o.AllowDowntime = holder, f.targetServices, r, f.allowDowntime
	d, err := deploy.New(o)
	if err != nil {
		r.Close()
		return deploy.Result{}, err
	}
	began := time.Now()
	res, err := d.Run(ctx)
	r.Close()
	recordDeployHistory(ctx, o.Hosts, holder, began, res, err, errOut)
	switch {
	case f.asJSON:
		b, _ := json.Marshal(res)
		fmt.Fprintf(out, "%s\n", b)
	case len(res.Hosts) > 0:
		printDeploySummary(out, res, err)
	}
	return res, err
}

// printDeploySummary prints each host's time against the analytic lower bound.
func printDeploySummary(w io.Writer, res deploy.Result, err error) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-10s %-8s %9s %9s %6s  %s\n", "host", "result", "took", "bound", "ratio", "phases")
	for _, h := range res.Hosts {
		result := "ok"
		switch {
		case h.RolledBack:
			result = "rollback"
		case !h.OK:
			result = "FAILED"
		}
		var ph []string
		for _, p := range h.Phases {
			ph = append(ph, fmt.Sprintf("%s %.2fs", p.Phase, p.Seconds))
		}
		ratio := "-"
		if h.BoundSeconds > 0 {
			ratio = fmt.Sprintf("%.2f", h.Seconds/h.BoundSeconds)
		}
		fmt.Fprintf(w, "%-10s %-8s %8.2fs %8.2fs %6s  %s\n", h.Host, result, h.Seconds, h.BoundSeconds, ratio, strings.Join(ph, ", "))
	}
	b := res.Bound
	fmt.Fprintf(w, "bound per host = drain %.2fs + stop %.2fs + start %.2fs + healthy %.2fs: the least any deploy of these numbers can take (%s)\n",
		b.Drain.Seconds(), b.Stop.Seconds(), b.Start.Seconds(), b.Healthy.Seconds(), b.Explain())
	if err == nil {
		fmt.Fprintf(w, "deployed %s to %d hosts in %.2fs, verified on every host\n", res.Version, len(res.Hosts), res.Seconds)
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/fleetstatus"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/haproxy/deploylb"
	"github.com/mythex/mythex/internal/termui"
)

// statusFlags are `mythex status`'s flags.
type statusFlags struct {
	file              string
	agentTokenFile    string
	lbTokenFile       string
	asJSON            bool
	timeout           time.Duration
	insecurePlaintext bool
}

func newStatusCmd() *cobra.Command {
	var f statusFlags
	cmd := &cobra.Command{
		Use:   "status -f mythex.yml",
		Short: "One line per host: versions, services, the load balancer's view, leases; exit 1 when degraded",
		Long: `status asks every host's agent and the load balancer once, in parallel, and
prints one line per host: the current, previous and last good version; each
service's state, uptime and latest exit; the load balancer's state, reason and
requests in flight for the host's target; the deploy lease's holder and expiry;
the watchdog and maintenance mode. Then a one-line verdict.

Degraded means: an agent or the load balancer cannot be read, a service is down
or unhealthy, a target is out of rotation, or hosts run different versions while
no deploy holds a lease.

Exit status: 0 healthy (or a deploy in progress); 1 degraded; 2 bad input.`,
		Example: `  go run ./cmd/mythex status -f examples/local/mythex.yml
  go run ./cmd/mythex status -f examples/local/mythex.yml --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := fleet.Load(f.file)
			if err != nil {
				return withCode(exitBadUse, err)
			}
			return runStatus(cmd.Context(), cfg, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "mythex.yml", "fleet config")
	fl.StringVar(&f.agentTokenFile, "agent-token-file", "", "file holding the agents' bearer token (default $"+agentTokenEnv+")")
	fl.StringVar(&f.lbTokenFile, "lb-token-file", "", "file holding the load balancer admin token (default load_balancer.admin_token_file, else $"+lbTokenEnv+")")
	fl.BoolVar(&f.asJSON, "json", false, "print the verdict as one JSON object")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Second, "bound on the one round of calls")
	fl.BoolVar(&f.insecurePlaintext, "insecure-plaintext", false, "allow plain HTTP to agents beyond loopback (the token crosses the network in clear)")
	return cmd
}

func runStatus(ctx context.Context, cfg *fleet.Loaded, f statusFlags, out, errOut io.Writer) error {
	if len(cfg.Hosts) == 0 {
		return usagef("%s lists no hosts: status needs hosts[]", cfg.Path)
	}
	if f.timeout <= 0 {
		return usagef("--timeout %v: give a bound like 5s", f.timeout)
	}
	agentToken, err := auth.LoadToken(f.agentTokenFile, agentTokenEnv)
	if err != nil {
		return usagef("agent token: %v", err)
	}
	driver, err := statusLB(cfg, f)
	if err != nil {
		return err
	}
	pool := agentconn.NewPool(agentconn.Options{InsecurePlaintext: f.insecurePlaintext, Warn: errOut, Timeout: f.timeout})
	defer pool.Close()
	v := fleetstatus.Gather(ctx, cfg, agentToken, driver, pool, f.timeout)
	if f.asJSON {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s\n", b)
	} else {
		termui.WriteStatus(out, v)
	}
	if !v.OK {
		return silentExit(exitFailed)
	}
	return nil
}

// statusLB is the driver status reads the load balancer through; nil for a
// kind it cannot read (then no LB column). ALB credentials are the AWS SDK's
// default chain; one DescribeTargetHealth call.
func statusLB(cfg *fleet.Loaded, f statusFlags) (lbport.Driver, error) {
	switch cfg.LoadBalancer.Kind {
	case fleet.KindHAProxy:
		if cfg.LoadBalancer.RuntimeAPI == "" {
			return nil, nil
		}
		d, err := deploylb.NewDriver(cfg)
		if err != nil {
			return nil, err
		}
		return d, nil
	case fleet.KindEmbedded, fleet.KindALB:
		return openLB(context.Background(), cfg, f.lbTokenFile)
	}
	return nil, nil
}

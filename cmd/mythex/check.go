package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/termui"
	"github.com/mythex/mythex/internal/timing"
)

func newCheckCmd() *cobra.Command {
	var (
		file, lbTokenFile string
		asJSON, live      bool
		native            nativeOpts
	)
	cmd := &cobra.Command{
		Use:   "check [-f mythex.yml] [--json] | check PATH... [--format text|json|github] [--strict]",
		Short: "Prove the fleet's timing relations: drain vs LB detection, grace, keep-alive, watchdog",
		Long: `check loads the fleet config and evaluates every timing invariant between its
numbers (docs/check.md explains the model):

  overlap            the service outlives the LB's routing to it
                     (serve_period > interval × unhealthy_threshold + timeout
                     [+ propagation_margin], or propagation after deregistration)
  grace              pre_stop + serve_period + shutdown_timeout ≤ stop_grace_period
  quick-return       healthy_threshold × interval ≤ timing.quick_return_max
  keep-alive         backend keepalive_idle_timeout > LB idle_timeout
  watchdog-patience  (failures_before_heal − 1) × watchdog.interval ≥ drain.max
  check-timeout      timeout < interval, and the ALB's ranges when kind is alb
  drain-budget       pre_stop + serve_period + shutdown_timeout ≤ drain.max
  capacity           hosts − deploy.batch_size ≥ deploy.min_in_service (default
                     1; "50%" of the hosts rounded up): a batch leaves enough
                     hosts serving — the same rule the deploy checks live
                     against the load balancer before each batch

When the fleet names deploy.compose, check also resolves it for every host
and refuses (exit 2) a deploy.verify or deploy.target_services entry that
names no service of it.

Each line shows ✓ (holds), ! (marginal: holds by the expected numbers but not
by a conservative bound; printed, not failed) or ✗ (fails), the relation with
the fleet's numbers and its slack. Below it, the break points: for each number
the relation reads, the value at which it would break (or, for a failing one,
the value that alone would make it hold), all other numbers unchanged.

--live reads the load balancer's target group (kind alb: DescribeTargetGroups and
DescribeTargetGroupAttributes, credentials from the AWS SDK's default chain; kind
embedded: the admin API at load_balancer.admin_listen, with --lb-token-file or
$MYTHEX_LB_TOKEN), evaluates the invariants on the live numbers, and lists every
field where the live target group differs from the file; it exits 1 on any
difference too.

Exit status: 0 when no invariant fails, 1 when one does, 2 when the config
cannot be read or is invalid (the error names file, line and field).

With PATH arguments (files, directories, or - for stdin) check reads the
files a team already has and answers in their keys: Kubernetes manifests
(Deployment/StatefulSet/DaemonSet, Service, Ingress with the AWS Load
Balancer Controller's annotations or ingress-nginx, TargetGroupBinding), ECS
task definition and service JSON with elbv2 describe-target-groups /
describe-target-group-attributes output, compose files (Swarm, Traefik
labels), Kamal's config/deploy.yml, fly.toml, Nomad job HCL, and mythex.yml.
Each finding names file, line and key, the current value and the smallest
change that fixes it; numbers a file leaves out take the platform's
documented default and the output says so.

  marginal  holds by the typical numbers but not by the worst seen (an ALB's
            propagation beyond 15s, a keep-alive gap under 10s, a slow return
            into rotation): printed, exit 0; --strict makes it exit 1.
  fail      a window where requests reach a closed port or are cut, by the
            platform's documented behaviour or where public incidents
            happened: exit 1.
  exit 2    an input is not understood; the error says what was recognised.`,
		Example: `  # the seed fleet after the write-up's fixes: every invariant holds
  mythex check -f examples/seed/after.yml

  # before the fixes: overlap fails by 57s, exit 1
  mythex check -f examples/seed/before.yml

  # the live ALB target group against the file (examples/local/alb.yml: the local fleet's LB as one)
  mythex check --live -f mythex.yml
  AWS_ACCESS_KEY_ID=AKIAEXAMPLE AWS_SECRET_ACCESS_KEY=secret mythex check --live -f examples/local/alb.yml

  # the local demo's embedded LB against its file (mythex lb running)
  mythex check --live -f examples/local/mythex.yml

  # the local example fleet; in CI, keep the failing invariants for the log
  mythex check -f examples/local/mythex.yml --json | jq '.invariants[] | select(.ok | not)'

  # Kubernetes manifests as rendered by Helm, from stdin
  helm template ./chart | mythex check -

  # a directory of manifests, compose files, fly.toml, Nomad jobs, mythex.yml; GitHub annotations
  mythex check examples/ --format github

  # fail on marginal findings too
  mythex check k8s/ fly.toml --strict`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.Flags().Changed("file") {
				return usagef("give either -f mythex.yml or PATH arguments, not both")
			}
			if len(args) > 0 && asJSON {
				return usagef("with PATH arguments use --format json instead of --json")
			}
			switch native.format {
			case formatText, formatJSON, formatGitHub:
			default:
				return usagef("--format %q: want text, json or github", native.format)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if live {
				if len(args) > 0 {
					return usagef("--live reads the load balancer of one mythex.yml: give it with -f, not PATH arguments")
				}
				// HAProxy's live check follows the file's report (below).
				if l, err := fleet.Load(file); err != nil || l.LoadBalancer.Kind != fleet.KindHAProxy {
					return runCheckLive(cmd, file, lbTokenFile, asJSON)
				}
			}
			if len(args) > 0 || native.format != formatText || native.strict {
				if len(args) == 0 {
					args = []string{file}
				}
				return runNativeCheck(cmd.OutOrStdout(), cmd.InOrStdin(), args, native)
			}
			l, err := loadFleet(file)
			if err != nil {
				return err
			}
			// The deploy's own preflight of deploy.compose (it exists, it
			// resolves for every host, deploy.verify and target_services
			// name its services), when the fleet names one.
			if l.Deploy.Compose != "" {
				if err := deploy.CheckCompose(cmd.Context(), l); err != nil {
					return withCode(exitBadUse, err)
				}
			}
			rep := timing.Check(l.Config)
			out := cmd.OutOrStdout()
			if asJSON {
				err = termui.WriteCheckJSON(out, file, rep)
			} else {
				err = termui.WriteCheckText(out, file, rep, termui.Color(out))
			}
			if err != nil {
				return fmt.Errorf("write report: %w", err)
			}
			liveOK := true
			if live {
				if liveOK, err = checkLive(cmd.Context(), out, l, asJSON); err != nil {
					return withCode(exitBadUse, err)
				}
			}
			if !rep.OK() || !liveOK {
				return silentExit(exitFailed)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "mythex.yml", "fleet config to check")
	cmd.Flags().BoolVar(&live, "live", false, "read the live load balancer: kind alb or embedded, the target group's numbers (checked, and every field that differs from the file); kind haproxy, through its Runtime API, servers without `check` and drift of rise/fall/inter/timeout (with --json: a second JSON document)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the verdicts as JSON instead of text")
	cmd.Flags().StringVar(&lbTokenFile, "lb-token-file", "", "the embedded LB's admin token file, for --live on kind embedded")
	cmd.Flags().StringVar(&native.format, "format", formatText, "with PATH arguments: text, json, or github (GitHub Actions annotations)")
	cmd.Flags().BoolVar(&native.strict, "strict", false, "exit 1 on marginal findings too")
	cmd.Flags().DurationVar(&native.callTimeout, "call-timeout", 45*time.Second, "mythex publish's --call-timeout, judged against a platform stop timeout it waits on (fly.toml kill_timeout); 0 skips it")
	return cmd
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
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

  # the live ALB target group against the file
  mythex check --live -f mythex.yml

  # the local demo's embedded LB against its file (mythex lb running)
  mythex check --live -f examples/local/mythex.yml

  # in CI, keep the failing invariants for the log
  mythex check --json | jq '.invariants[] | select(.ok | not)'

  # Kubernetes manifests as rendered by Helm, from stdin
  helm template ./chart | mythex check -

  # a directory of manifests, compose files, fly.toml, Nomad jobs; GitHub annotations
  mythex check deploy/ --format github

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
			l, err := fleet.Load(file)
			if err != nil {
				if errors.Is(err, fleet.ErrInvalid) {
					return err
				}
				return withCode(exitBadUse, err)
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
				err = writeCheckJSON(out, file, rep)
			} else {
				err = writeCheckText(out, file, rep, useColor(out))
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

// checkJSON is the shape of `mythex check --json`.
type checkJSON struct {
	File       string          `json:"file"`
	OK         bool            `json:"ok"`
	Level      string          `json:"level"`
	Model      string          `json:"model"`
	Invariants []invariantJSON `json:"invariants"`
}

type invariantJSON struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Level  string `json:"level"`
	Detail string `json:"detail"`
	// SlackSeconds is null when the binding relation is between counts.
	SlackSeconds *float64 `json:"slack_seconds"`
	// BreaksAt maps each input's dotted path to the edges at which the
	// invariant fails: it fails when value <op> edge.
	BreaksAt map[string][]breakJSON `json:"breaks_at"`
	Notes    []string               `json:"notes,omitempty"`
}

type breakJSON struct {
	Op    string `json:"op"`
	Value string `json:"value"`
	// AlsoBreaks: for a failing invariant, the others this one-number fix
	// would make fail.
	AlsoBreaks []string `json:"also_breaks,omitempty"`
}

func writeCheckJSON(w io.Writer, file string, rep timing.Report) error {
	out := checkJSON{File: file, OK: rep.OK(), Level: rep.Level.String(), Model: rep.Model, Invariants: []invariantJSON{}}
	for _, r := range rep.Results {
		ij := invariantJSON{Name: r.Name, OK: r.OK(), Level: r.Level.String(), Detail: r.Formula,
			BreaksAt: map[string][]breakJSON{}, Notes: r.Notes}
		if r.HasSlack {
			s := r.Slack.Seconds()
			ij.SlackSeconds = &s
		}
		for _, b := range r.Breaks {
			ij.BreaksAt[b.Field] = append(ij.BreaksAt[b.Field], breakJSON{Op: string(b.Op), Value: b.Value, AlsoBreaks: b.AlsoBreaks})
		}
		out.Invariants = append(out.Invariants, ij)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// useColor reports whether w is a terminal that should get colour: not when
// NO_COLOR is set (no-color.org) or TERM is dumb.
func useColor(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return isatty.IsTerminal(f.Fd())
}

const (
	nameWidth = 19 // "watchdog-patience" + 2
	wrapWidth = 100
)

func writeCheckText(w io.Writer, file string, rep timing.Report, color bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "mythex check %s\n", file)
	b.WriteString(wrap(rep.Model, "model: ", "       ", wrapWidth))
	b.WriteString("\n")
	indent := strings.Repeat(" ", 2+nameWidth)
	for _, r := range rep.Results {
		line := fmt.Sprintf("%s %-*s%s", mark(r.Level, color), nameWidth, r.Name, r.Formula)
		if s := r.SlackPhrase(); s != "" {
			line += " — " + s
		}
		b.WriteString(line + "\n")
		for _, n := range r.Notes {
			b.WriteString(wrap(n, indent, indent, wrapWidth))
		}
		if items := breakItems(r); len(items) > 0 {
			label := "breaks at: "
			if !r.OK() {
				label = "holds at: "
			}
			b.WriteString(wrapList(items, indent+label, indent+strings.Repeat(" ", len(label)), wrapWidth))
		}
	}
	b.WriteString("\n")
	n := len(rep.Results)
	switch failed, marginal := rep.Failed(), rep.MarginalNames(); {
	case len(failed) > 0:
		fmt.Fprintf(&b, "%s %d of %d invariants fail: %s\n", mark(timing.Fail, color), len(failed), n, strings.Join(failed, ", "))
	case len(marginal) > 0:
		fmt.Fprintf(&b, "%s all %d invariants hold; %d marginal: %s\n", mark(timing.Marginal, color), n, len(marginal), strings.Join(marginal, ", "))
	default:
		fmt.Fprintf(&b, "%s all %d invariants hold\n", mark(timing.Pass, color), n)
	}
	b.WriteString("(break points: one number changed, all others as they are)\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// breakItems writes a result's break points, grouped by field: for a holding
// invariant where it breaks ("drain.serve_period ≤ 12s"), for a failing one
// where it would hold ("drain.serve_period > 62s").
func breakItems(r timing.Result) []string {
	var fields []string
	conds := map[string][]string{}
	for _, br := range r.Breaks {
		if !r.OK() {
			br = br.Holding()
		}
		if _, seen := conds[br.Field]; !seen {
			fields = append(fields, br.Field)
		}
		cond := br.Op.Symbol() + " " + br.Value
		if len(br.AlsoBreaks) > 0 {
			cond += " (but that breaks " + strings.Join(br.AlsoBreaks, ", ") + ")"
		}
		conds[br.Field] = append(conds[br.Field], cond)
	}
	joiner := " or "
	if !r.OK() {
		joiner = " and "
	}
	items := make([]string, 0, len(fields))
	for _, f := range fields {
		items = append(items, f+" "+strings.Join(conds[f], joiner))
	}
	return items
}

func mark(l timing.Level, color bool) string {
	sym, code := "✓", "32"
	switch l {
	case timing.Marginal:
		sym, code = "!", "33"
	case timing.Fail:
		sym, code = "✗", "31"
	}
	if !color {
		return sym
	}
	return "\x1b[" + code + "m" + sym + "\x1b[0m"
}

// wrap breaks text into lines of at most width runes (words are not split),
// the first prefixed by first, the rest by rest.
func wrap(text, first, rest string, width int) string {
	return wrapWords(strings.Fields(text), first, rest, width)
}

// wrapList is wrap for a comma-separated list whose items are never split.
func wrapList(items []string, first, rest string, width int) string {
	words := make([]string, len(items))
	for i, it := range items {
		if i < len(items)-1 {
			it += ","
		}
		words[i] = it
	}
	return wrapWords(words, first, rest, width)
}

func wrapWords(words []string, first, rest string, width int) string {
	var b strings.Builder
	line, empty := first, true
	for _, w := range words {
		if !empty && runeLen(line)+1+runeLen(w) > width {
			b.WriteString(line + "\n")
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	b.WriteString(line + "\n")
	return b.String()
}

func runeLen(s string) int { return len([]rune(s)) }

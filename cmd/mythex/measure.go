package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/probe"
	"github.com/mythex/mythex/internal/report"
	"github.com/mythex/mythex/internal/termui"
)

// measureOptions are mythex measure's flags.
type measureOptions struct {
	url           string
	rate          float64
	duration      time.Duration
	timeout       time.Duration
	tail          time.Duration
	maxDropped    int64
	maxInFlight   int
	lateTolerance time.Duration
	healthPath    string
	jsonOut       bool
	quiet         bool
	report        string
}

func newMeasureCmd() *cobra.Command {
	o := measureOptions{}
	cmd := &cobra.Command{
		Use:   "measure --url URL [flags] [-- COMMAND [ARG...]]",
		Short: "Probe a URL at a constant rate and count the requests that reached nothing",
		Long: `measure sends requests to one URL on a fixed open-loop schedule (request i
leaves at start + i/rate whether or not earlier ones answered) and classifies
each one:

  reached_nothing  no application answered: a load-balancer-generated 5xx
                   (X-Mythex-Lb header, or an ALB's "Server: awselb/..."), a
                   502/504 with no sign an app answered, a refused, reset or
                   closed connection, a timeout, a keep-alive connection that
                   died under the request. This is what users feel as a 502.
  app_error        a 5xx the application itself answered.
  drain_signal     a 503 from the health path (--health-path): the drain working.
  ok               every other response (2xx-4xx).

The prober's own failures (a name that does not resolve, no file descriptors
left) are probe errors, reported apart and never counted as dropped.

Latency is measured from each request's scheduled time (what a user arriving
on schedule waited) and from its actual send; sends that left late and
requests not sent because --max-in-flight were in flight are counted.

With -- COMMAND, measure probes while the command runs (run directly, never
through a shell; its output passes through — to stderr with --json, so stdout
stays JSON) and for --tail after it exits.

A line per second goes to stderr as the run goes; the summary (or --json) goes
to stdout. Exit status: 0 ok; 1 when more than --max-dropped requests reached
nothing or the command failed; 2 bad input; 3 when the measurement is
incomplete (probe errors, unsent requests, interrupted). --json carries the
same verdict: "verdict" (pass, fail, incomplete), "verdict_reason" and
"max_dropped" beside the totals and per-second buckets.`,
		Example: `  # 500 requests per second for 30 s through the local fleet's load balancer (examples/local)
  mythex measure --url http://127.0.0.1:9080/

  # a deploy under load; fail if a single request reached nothing
  mythex measure --url http://127.0.0.1:9080/ --rate 200 --max-dropped 0 --json \
      -- mythex deploy -f examples/local/mythex.yml --version v2 > measure.json

  # the same, as an HTML report (requests by outcome, versions, latency per second)
  mythex measure --url http://127.0.0.1:9080/ --duration 60s --report measure.html

  # watch a target's health endpoint: its 503s are drain signals, not errors
  mythex measure --url http://127.0.0.1:9101/healthz --rate 20 --duration 60s`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return usagef("unexpected argument %q: put the command to run while measuring after --, e.g. mythex measure --url URL -- COMMAND", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMeasure(cmd.Context(), o, args, measureIO{
				stdin:           cmd.InOrStdin(),
				stdout:          cmd.OutOrStdout(),
				stderr:          cmd.ErrOrStderr(),
				durationChanged: cmd.Flags().Changed("duration"),
				tailChanged:     cmd.Flags().Changed("tail"),
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.url, "url", "", "absolute http:// or https:// URL to probe (required)")
	f.Float64Var(&o.rate, "rate", 500, "requests per second, on a fixed schedule (fractions allowed: 0.5 is one every 2s)")
	f.DurationVar(&o.duration, "duration", 30*time.Second, "how long to probe (without a command)")
	f.DurationVar(&o.timeout, "timeout", probe.DefaultTimeout, "per-request time limit, send to last body byte; slower requests reached nothing")
	f.DurationVar(&o.tail, "tail", 2*time.Second, "keep probing this long after the command exits")
	f.Int64Var(&o.maxDropped, "max-dropped", 0, "exit 1 when more requests than this reached nothing")
	f.IntVar(&o.maxInFlight, "max-in-flight", 0, "bound on requests in flight; 0 = ⌈rate × timeout × 1.2⌉ + 16, at most 10000")
	f.DurationVar(&o.lateTolerance, "late-tolerance", probe.DefaultLateTolerance, "a send leaving more than this after its scheduled time counts as late")
	f.StringVar(&o.healthPath, "health-path", probe.DefaultHealthPath, "the targets' health path: when --url's path equals it, a 503 is a drain signal")
	f.BoolVar(&o.jsonOut, "json", false, "print the report as JSON on stdout")
	f.BoolVar(&o.quiet, "quiet", false, "nothing on stderr but warnings and errors (no header, no per-second timeline)")
	f.StringVar(&o.report, "report", "", "write an HTML report (requests by outcome, versions answering, latency, per second) to this file")
	return cmd
}

// configFieldsAsFlags names probe.Config's fields in errors by their flags.
var configFieldsAsFlags = strings.NewReplacer(
	"url: ", "--url: ", "rate: ", "--rate: ", "duration: ", "--duration: ", "timeout: ", "--timeout: ",
	"max_in_flight: ", "--max-in-flight: ", "late_tolerance: ", "--late-tolerance: ", "health_path: ", "--health-path: ",
)

// measureIO is where mythex measure reads and writes.
type measureIO struct {
	stdin           io.Reader
	stdout, stderr  io.Writer
	durationChanged bool
	tailChanged     bool
}

func runMeasure(ctx context.Context, o measureOptions, argv []string, mio measureIO) error {
	withCommand := len(argv) > 0
	switch {
	case o.url == "":
		return usagef("--url is required: give the URL to probe, e.g. --url http://127.0.0.1:8080/")
	case withCommand && mio.durationChanged:
		return usagef("--duration applies only without a command: with -- COMMAND the probe runs while the command runs, then for --tail")
	case !withCommand && mio.tailChanged:
		return usagef("--tail applies only with -- COMMAND")
	case o.tail < 0:
		return usagef("--tail %v is negative: give how long to keep probing after the command exits, e.g. 2s", o.tail)
	case o.maxDropped < 0:
		return usagef("--max-dropped %d is negative: give how many requests may reach nothing, e.g. 0", o.maxDropped)
	case !withCommand && o.duration <= 0:
		return usagef("--duration %v: give how long to probe, e.g. 30s", o.duration)
	case o.timeout == 0:
		return usagef("--timeout 0: give the per-request time limit, e.g. 2s (a request slower than it reached nothing)")
	}
	if err := checkReportPath(o.report); err != nil {
		return err
	}
	var cmdPath string
	if withCommand {
		p, err := exec.LookPath(argv[0])
		if err != nil {
			return usagef("command %q: %v", argv[0], err)
		}
		cmdPath = p
	}

	tuneGC()
	mio.stdout, mio.stderr = termui.Serialized(mio.stdout), termui.Serialized(mio.stderr)
	style := probe.Style{Color: termui.Color(mio.stderr)}
	cfg := probe.Config{
		URL:           o.url,
		Rate:          o.rate,
		Timeout:       o.timeout,
		MaxInFlight:   o.maxInFlight,
		LateTolerance: o.lateTolerance,
		HealthPath:    o.healthPath,
	}
	if !withCommand {
		cfg.Duration = o.duration
	}
	deps := probe.Deps{}
	var rec *deployrec.Recorder // nil records nothing
	if o.report != "" {
		rec = deployrec.New("mythex "+strings.Join(os.Args[1:], " "), nil)
	}
	switch {
	case !o.quiet:
		deps.OnBucket = func(b probe.Bucket) {
			rec.ProbeSecond(b)
			fmt.Fprintln(mio.stderr, probe.TimelineLine(b, style))
		}
	case rec != nil:
		deps.OnBucket = rec.ProbeSecond
	}
	p, err := probe.New(cfg, deps)
	if err != nil {
		return usagef("%s", configFieldsAsFlags.Replace(err.Error()))
	}
	cfg = p.Config()

	if !o.quiet {
		fmt.Fprintln(mio.stderr, probe.HeaderLine(cfg, argv, o.tail))
		fmt.Fprintln(mio.stderr, probe.TimelineHeader())
	}
	rec.ProbeStarted(cfg.URL, cfg.Rate)
	run := probe.While{Path: cmdPath, Argv: argv, Tail: o.tail, Stdin: mio.stdin, Stdout: mio.stdout, Stderr: mio.stderr}
	if o.jsonOut {
		run.Stdout = mio.stderr // keep stdout for the JSON report
	}
	rep, interrupted, err := probe.Measure(ctx, p, run)
	if err != nil {
		return err
	}
	rec.ProbeStopped(rep)
	if o.report != "" {
		if err := report.WriteFile(o.report, rec.Recording(), mio.stderr); err != nil {
			return err
		}
	}

	v := probe.Judge(&rep, o.maxDropped, interrupted)
	if o.jsonOut {
		if err := termui.WriteJSON(mio.stdout, probe.JudgedReport{Report: rep, Verdict: v, MaxDropped: o.maxDropped}); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	} else if err := probe.WriteSummary(mio.stdout, &rep, style); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if w := probe.LateWarning(&rep, cfg.LateTolerance); w != "" {
		fmt.Fprintln(mio.stderr, w)
	}
	if !o.jsonOut {
		fmt.Fprintln(mio.stdout, v.Line())
	}
	switch v.Grade {
	case probe.Pass:
		return nil
	case probe.Fail:
		return withCode(exitFailed, errors.New(v.Message))
	}
	return withCode(exitUnknown, errors.New(v.Message))
}

// measureGCPercent is the GOGC mythex measure runs with unless $GOGC is set.
// It mattered when requests went through net/http (about 4 KB allocated per
// request: at the default 100 a 5,000 req/s run collected several times a
// second, each collection also shrinking the idle workers' stacks, and 4.3 %
// of sends were late). The fasthttp path allocates nothing per request in
// steady state (one collection, at start-up, in a 15 s run at 5,000 req/s at
// GOGC 100), so 400 now only spaces out the collections of bursts that do
// allocate (a slow target growing the worker pool, reconnects). The heap may
// grow to five times the live data: tens of MB.
const measureGCPercent = 400

func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(measureGCPercent)
	}
}

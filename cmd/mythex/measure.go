package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/probe"
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

// commandWaitDelay is how long a command gets to exit after it was asked to
// (on interrupt) before it is killed.
const commandWaitDelay = 10 * time.Second

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
	mio.stdout, mio.stderr = serialized(mio.stdout), serialized(mio.stderr)
	color := isTerminal(mio.stderr) && os.Getenv("NO_COLOR") == ""
	style := probe.Style{Color: color}
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

	what := fmt.Sprintf("for %s", cfg.Duration)
	if withCommand {
		what = fmt.Sprintf("while %s runs, then %s", strings.Join(argv, " "), o.tail)
	}
	if !o.quiet {
		fmt.Fprintf(mio.stderr, "measuring %s %s at %g req/s %s (timeout %s, max in flight %d)\n",
			cfg.Method, cfg.URL, cfg.Rate, what, cfg.Timeout, cfg.MaxInFlight)
		fmt.Fprintln(mio.stderr, probe.TimelineHeader())
	}

	rec.ProbeStarted(cfg.URL, cfg.Rate)
	probeStart := time.Now() // the timeline's second 0: request 0 is due at Start
	if err := p.Start(ctx); err != nil {
		return fmt.Errorf("start probe: %w", err)
	}
	var cmdResult *probe.CommandResult
	if withCommand {
		cmdOut := mio.stdout
		if o.jsonOut {
			cmdOut = mio.stderr // keep stdout for the JSON report
		}
		cmdResult = runCommand(ctx, cmdPath, argv, probeStart, mio.stdin, cmdOut, mio.stderr)
		t := time.NewTimer(o.tail)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	} else {
		select {
		case <-p.Done():
		case <-ctx.Done():
		}
	}
	report := p.Stop()
	report.Command = cmdResult
	interrupted := ctx.Err() != nil
	rec.ProbeStopped(report)
	if o.report != "" {
		if err := writeReport(o.report, rec.Recording(), mio.stderr); err != nil {
			return err
		}
	}

	v := measureVerdict(&report, o.maxDropped, interrupted)
	if o.jsonOut {
		enc := json.NewEncoder(mio.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(measureOutput{report: report, verdict: verdictJSON{Verdict: v.name(), Reason: v.message, MaxDropped: o.maxDropped}}); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	} else if err := probe.WriteSummary(mio.stdout, &report, style); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if late := pctOf(report.LateSends, report.Requests); late > 1 {
		fmt.Fprintf(mio.stderr, "warning: %.1f%% of sends left more than %s behind schedule (machine busy?); latency is still measured from the scheduled time\n",
			late, cfg.LateTolerance)
	}
	if !o.jsonOut {
		fmt.Fprintln(mio.stdout, v.line())
	}
	if v.code == exitOK {
		return nil
	}
	return withCode(v.code, errors.New(v.message))
}

// runCommand runs argv (path resolved) to its end, with the given streams.
// On ctx's end the command is interrupted, then killed after
// commandWaitDelay.
//
// The command gets $MYTHEX_MEASURE_START, the prober's second 0 in Unix
// nanoseconds: `mythex deploy` counts its progress lines' seconds from it.
func runCommand(ctx context.Context, path string, argv []string, probeStart time.Time, stdin io.Reader, stdout, stderr io.Writer) *probe.CommandResult {
	c := exec.CommandContext(ctx, path, argv[1:]...)
	c.Args = argv
	c.Env = append(os.Environ(), fmt.Sprintf("%s=%d", measureStartEnv, probeStart.UnixNano()))
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = commandWaitDelay
	start := time.Now()
	err := c.Run()
	res := &probe.CommandResult{Argv: argv, Elapsed: time.Since(start)}
	if c.ProcessState != nil {
		res.ExitCode = c.ProcessState.ExitCode()
	} else {
		res.ExitCode = -1
	}
	if err != nil {
		res.Error = err.Error()
		if res.ExitCode == 0 {
			res.ExitCode = -1
		}
	}
	return res
}

// measureStartEnv carries the prober's second 0 (Unix nanoseconds) to the
// command measure runs.
const measureStartEnv = "MYTHEX_MEASURE_START"

// measureStart is the prober's second 0 from $MYTHEX_MEASURE_START, when
// this process runs under `mythex measure`; ok false otherwise or when the
// value is not a time within a day of now.
func measureStart(now time.Time) (time.Time, bool) {
	ns, err := strconv.ParseInt(os.Getenv(measureStartEnv), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	t := time.Unix(0, ns)
	if d := now.Sub(t); d < -time.Minute || d > 24*time.Hour {
		return time.Time{}, false
	}
	return t, true
}

// measureOutput is mythex measure --json's output: the report's fields, then
// the verdict the exit code carries, so CI can read it from the JSON too.
type measureOutput struct {
	report  probe.Report
	verdict verdictJSON
}

// verdictJSON is the verdict part of mythex measure --json.
type verdictJSON struct {
	// Verdict is pass (exit 0), fail (exit 1) or incomplete (exit 3).
	Verdict string `json:"verdict"`
	// Reason says why, as the text output's last line does.
	Reason string `json:"verdict_reason"`
	// MaxDropped is --max-dropped: requests allowed to reach nothing.
	MaxDropped int64 `json:"max_dropped"`
}

// MarshalJSON is the report's JSON object with the verdict's fields appended.
func (m measureOutput) MarshalJSON() ([]byte, error) {
	rep, err := json.Marshal(m.report)
	if err != nil {
		return nil, err
	}
	extra, err := json.Marshal(m.verdict)
	if err != nil {
		return nil, err
	}
	rep = bytes.TrimRight(rep, " \n")
	if len(rep) < 2 || rep[len(rep)-1] != '}' {
		return nil, fmt.Errorf("report JSON is not an object: %.40q", rep)
	}
	out := append(rep[:len(rep)-1:len(rep)-1], ',')
	return append(out, extra[1:]...), nil
}

// verdict is mythex measure's outcome: an exit code and why.
type verdict struct {
	code    int
	message string
}

// name is the verdict as JSON gives it: pass, fail or incomplete.
func (v verdict) name() string {
	switch v.code {
	case exitOK:
		return "pass"
	case exitFailed:
		return "fail"
	}
	return "incomplete"
}

func (v verdict) line() string {
	return strings.ToUpper(v.name()) + ": " + v.message
}

// measureVerdict decides the exit code from a report: failures (requests
// that reached nothing beyond maxDropped, a failed command) → 1; else a
// measurement that could not cover what it should (interrupted, probe
// errors, unsent requests) → 3; else 0.
func measureVerdict(r *probe.Report, maxDropped int64, interrupted bool) verdict {
	var fails []string
	if r.ReachedNothing > maxDropped {
		fails = append(fails, fmt.Sprintf("%d of %d requests reached nothing (allowed %d)", r.ReachedNothing, r.Requests, maxDropped))
	}
	if c := r.Command; c != nil && (c.ExitCode != 0 || c.Error != "") {
		why := c.Error
		if why == "" {
			why = fmt.Sprintf("exit status %d", c.ExitCode)
		}
		fails = append(fails, fmt.Sprintf("command %s failed: %s", c.Argv[0], why))
	}
	if len(fails) > 0 {
		return verdict{exitFailed, strings.Join(fails, "; ")}
	}
	var gaps []string
	if interrupted {
		gaps = append(gaps, fmt.Sprintf("interrupted after %s", r.Elapsed.Round(time.Millisecond)))
	}
	if r.ProbeErrors > 0 {
		gaps = append(gaps, fmt.Sprintf("%d probe errors (the prober could not run those requests)", r.ProbeErrors))
	}
	if r.Unsent > 0 {
		gaps = append(gaps, fmt.Sprintf("%d requests not sent: %d were in flight (raise --max-in-flight or lower --rate)", r.Unsent, r.MaxInFlight))
	}
	if len(gaps) > 0 {
		return verdict{exitUnknown, fmt.Sprintf("%d of %d requests reached nothing, but the measurement is incomplete: %s",
			r.ReachedNothing, r.Requests, strings.Join(gaps, "; "))}
	}
	return verdict{exitOK, fmt.Sprintf("%d of %d requests reached nothing (allowed %d)", r.ReachedNothing, r.Requests, maxDropped)}
}

func pctOf(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) * 100 / float64(of)
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

// serialized returns w itself when it is a file (the OS orders writes, and
// a command run with it inherits it: a terminal stays a terminal), else w
// behind a mutex: the timeline and a command's output write concurrently.
func serialized(w io.Writer) io.Writer {
	if _, ok := w.(*os.File); ok {
		return w
	}
	return &lockedWriter{w: w}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

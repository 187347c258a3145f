package probe

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// While says what Measure probes through: a command to run, or (Argv empty)
// the prober's own Config.Duration.
type While struct {
	// Path is Argv[0] resolved (exec.LookPath); Argv the command line, run
	// directly, never through a shell.
	Path string
	Argv []string
	// Tail is how long to keep probing after the command exits.
	Tail time.Duration
	// Stdin, Stdout and Stderr are the command's streams.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Measure starts p and probes while run's command runs and for run.Tail
// after (RunCommand, which hands it the second 0), or for p's duration
// without a command, or until ctx ends; then stops p and returns its report
// with the command's result, and whether ctx ended first (the measurement is
// then incomplete). The error is the prober's start error.
func Measure(ctx context.Context, p *Prober, run While) (rep Report, interrupted bool, err error) {
	probeStart := time.Now() // the timeline's second 0: request 0 is due at Start
	if err := p.Start(ctx); err != nil {
		return Report{}, false, fmt.Errorf("start probe: %w", err)
	}
	var cmdResult *CommandResult
	if len(run.Argv) > 0 {
		cmdResult = RunCommand(ctx, run.Path, run.Argv, probeStart, run.Stdin, run.Stdout, run.Stderr)
		t := time.NewTimer(run.Tail)
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
	rep = p.Stop()
	rep.Command = cmdResult
	return rep, ctx.Err() != nil, nil
}

// HeaderLine is the first line `mythex measure` prints: what it probes, how
// fast, for how long (argv and tail when it runs a command) and within which
// bounds.
func HeaderLine(cfg Config, argv []string, tail time.Duration) string {
	what := fmt.Sprintf("for %s", cfg.Duration)
	if len(argv) > 0 {
		what = fmt.Sprintf("while %s runs, then %s", strings.Join(argv, " "), tail)
	}
	return fmt.Sprintf("measuring %s %s at %g req/s %s (timeout %s, max in flight %d)",
		cfg.Method, cfg.URL, cfg.Rate, what, cfg.Timeout, cfg.MaxInFlight)
}

// LateWarning warns when more than 1% of r's sends left later than
// lateTolerance behind schedule (a busy machine); "" otherwise.
func LateWarning(r *Report, lateTolerance time.Duration) string {
	if r.Requests == 0 {
		return ""
	}
	late := float64(r.LateSends) * 100 / float64(r.Requests)
	if late <= 1 {
		return ""
	}
	return fmt.Sprintf("warning: %.1f%% of sends left more than %s behind schedule (machine busy?); latency is still measured from the scheduled time", late, lateTolerance)
}

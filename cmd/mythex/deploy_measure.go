package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/probe"
)

// checkMeasureFlags refuses deploy's --measure, --rate and --report
// mistakes before anything is loaded or touched.
func checkMeasureFlags(f deployFlags) error {
	switch {
	case f.rateSet && f.measureURL == "":
		return usagef("--rate applies only with --measure URL: give the URL to probe through the deploy, e.g. --measure http://127.0.0.1:8080/")
	case f.measureURL != "" && !strings.Contains(f.measureURL, "://"):
		return usagef("--measure %q has no http:// or https://: give the scheme too, e.g. --measure http://%s", f.measureURL, f.measureURL)
	}
	return checkReportPath(f.report)
}

// loadRun is the prober running through a deploy; a nil *loadRun measures
// nothing.
type loadRun struct {
	p    *probe.Prober
	rec  *deployrec.Recorder
	tail time.Duration
}

// startDeployLoad starts the prober of deploy --measure a moment (one health
// check interval, at least half a second) before the deploy begins, so the
// report shows the fleet serving before anything changed. Without
// --measure it returns nil.
// With --json each second also goes to jsonOut as a probe_second line
// (jsonOut must be the event stream's writer, serialised).
func startDeployLoad(ctx context.Context, cfg *fleet.Loaded, f deployFlags, rec *deployrec.Recorder, jsonOut io.Writer) (*loadRun, error) {
	if f.measureURL == "" {
		return nil, nil
	}
	deps := probe.Deps{OnBucket: rec.ProbeSecond}
	if f.asJSON {
		deps.OnBucket = func(b probe.Bucket) {
			rec.ProbeSecond(b)
			fmt.Fprintf(jsonOut, "%s\n", probeSecondLine(b))
		}
	}
	p, err := probe.New(probe.Config{URL: f.measureURL, Rate: f.rate}, deps)
	if err != nil {
		return nil, usagef("--measure: %s", strings.NewReplacer("url: ", "", "rate: ", "--rate: ").Replace(err.Error()))
	}
	rec.ProbeStarted(p.Config().URL, f.rate)
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	hc := cfg.LoadBalancer.HealthCheck
	lead := max(hc.Interval, 500*time.Millisecond)
	sleepCtx(ctx, lead)
	// The tail is as long as the LB needs to notice anything the deploy left
	// behind (U failed checks, each up to the timeout).
	return &loadRun{p: p, rec: rec, tail: hc.Interval*time.Duration(hc.UnhealthyThreshold) + hc.Timeout}, nil
}

// stop waits out the tail, stops the prober and returns its report; nil
// without --measure.
func (l *loadRun) stop(ctx context.Context) *probe.Report {
	if l == nil {
		return nil
	}
	sleepCtx(ctx, l.tail)
	rep := l.p.Stop()
	l.rec.ProbeStopped(rep)
	return &rep
}

// probeSecondLine is one second of the prober as the --json event stream
// carries it.
func probeSecondLine(b probe.Bucket) []byte {
	line, _ := json.Marshal(struct {
		At     time.Time    `json:"at"`
		Kind   string       `json:"kind"`
		Second probe.Bucket `json:"second"`
	}{time.Now(), "probe_second", b})
	return line
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

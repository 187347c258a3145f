package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/probe"
	"github.com/mythex/mythex/internal/termui"
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

// startDeployLoad starts the prober of deploy --measure (deployrec.StartLoad).
// Without --measure it returns nil, which measures nothing.
// With --json each second also goes to jsonOut as a probe_second line
// (jsonOut must be the event stream's writer, serialised).
func startDeployLoad(ctx context.Context, cfg *fleet.Loaded, f deployFlags, rec *deployrec.Recorder, jsonOut io.Writer) (*deployrec.Load, error) {
	if f.measureURL == "" {
		return nil, nil
	}
	deps := probe.Deps{OnBucket: rec.ProbeSecond}
	if f.asJSON {
		deps.OnBucket = func(b probe.Bucket) {
			rec.ProbeSecond(b)
			fmt.Fprintf(jsonOut, "%s\n", termui.ProbeSecondJSON(b, time.Now()))
		}
	}
	p, err := probe.New(probe.Config{URL: f.measureURL, Rate: f.rate}, deps)
	if err != nil {
		return nil, usagef("--measure: %s", strings.NewReplacer("url: ", "", "rate: ", "--rate: ").Replace(err.Error()))
	}
	return deployrec.StartLoad(ctx, p, rec, f.rate, cfg.LoadBalancer.HealthCheck)
}

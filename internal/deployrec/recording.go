// Package deployrec records what a deploy report shows while the deploy runs:
// each host's phase events and the load balancer's view of its target (from
// the deploy's own polls, deploy.EventTarget), the prober's outcomes second by
// second (requests by class, versions answering, latency p50/p99), the
// deploy's result, the fleet's config and its timing invariants with their
// slack. Nothing is reconstructed afterwards: the Recorder is a
// deploy.Observer and a probe.Deps.OnBucket sink.
//
// A Recording marshals to JSON and back without loss; package report draws it
// as one self-contained HTML file.
package deployrec

import (
	"time"

	"github.com/mythex/mythex/internal/deploy"
)

// FormatVersion is Recording.Format for recordings this package writes.
const FormatVersion = 1

// Recording is everything a report shows about one run of mythex: a demo, a
// deploy, or a measurement.
type Recording struct {
	// Format is FormatVersion.
	Format int `json:"format"`
	// Command is what was run, for the report's title, e.g. "mythex demo".
	Command string `json:"command"`
	// CreatedAt is when recording began.
	CreatedAt time.Time `json:"created_at"`
	// Fleet is the fleet's config; nil for a measurement without one.
	Fleet *Fleet `json:"fleet,omitempty"`
	// Invariants are the timing invariants of the fleet's config, with
	// their slack.
	Invariants []Invariant `json:"invariants,omitempty"`
	// Deploys holds one entry per deploy (or measurement), in order.
	Deploys []Deploy `json:"deploys"`
}

// Fleet is the part of a fleet's config a report shows.
type Fleet struct {
	// Hosts are the host names, in deploy order.
	Hosts []string `json:"hosts"`
	// Settings are the config's timing and deploy settings, by their
	// mythex.yml field path.
	Settings []Setting `json:"settings"`
	// Notes say anything else about the config, e.g. a demo's time scale.
	Notes []string `json:"notes,omitempty"`
}

// Setting is one config value as mythex.yml writes it.
type Setting struct {
	// Field is the dotted path, e.g. load_balancer.health_check.interval.
	Field string `json:"field"`
	// Value is the value as written in mythex.yml, e.g. "1s" or "2".
	Value string `json:"value"`
}

// Invariant is the verdict on one timing invariant of the fleet's config.
type Invariant struct {
	// Name is the invariant's name, e.g. overlap.
	Name string `json:"name"`
	// Level is pass, marginal or fail.
	Level string `json:"level"`
	// Formula is the binding relation written out with the fleet's numbers.
	Formula string `json:"formula"`
	// Slack says how far the relation is from breaking, e.g. "slack 3s"
	// or "short by 57s"; empty when the relation has no duration slack.
	Slack string `json:"slack,omitempty"`
	// SlackSeconds is the slack in seconds (negative: the shortfall); nil
	// when Slack is empty.
	SlackSeconds *float64 `json:"slack_seconds,omitempty"`
}

// Deploy is one deploy, or one measurement without a deploy, with its own
// time axis.
type Deploy struct {
	// From is the version the fleet ran before; empty when unknown.
	From string `json:"from,omitempty"`
	// Version is the version deployed; empty for a measurement alone.
	Version string `json:"version,omitempty"`
	// Hosts are the hosts of the deploy, in order.
	Hosts []string `json:"hosts,omitempty"`
	// Start and End bound the recording of this deploy (its time axis).
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Events are the deploy's phase and target events, in the order they
	// happened.
	Events []deploy.Event `json:"events,omitempty"`
	// Result is the deploy's outcome; nil for a measurement alone, or a
	// deploy still running.
	Result *Result `json:"result,omitempty"`
	// Probe is what the prober saw; nil when nothing was measured.
	Probe *Probe `json:"probe,omitempty"`
}

// Result is how a deploy ended.
type Result struct {
	OK bool `json:"ok"`
	// Error is why it failed; empty when OK.
	Error string `json:"error,omitempty"`
	// Seconds is the deploy's duration.
	Seconds float64 `json:"seconds"`
	// Hosts are the per-host outcomes, phases and bounds.
	Hosts []deploy.HostResult `json:"hosts"`
	// RolledBack names the hosts a fleet rollback returned to their
	// previous version (a failed host's own rollback is in its result).
	RolledBack []string `json:"rolled_back,omitempty"`
}

// Probe is what the prober measured during one deploy.
type Probe struct {
	// URL is the URL probed; Rate its requests per second.
	URL  string  `json:"url"`
	Rate float64 `json:"rate"`
	// StartedAt is when request 0 was due: second i of Seconds starts at
	// StartedAt + i s.
	StartedAt time.Time `json:"started_at"`
	// Seconds holds one entry per second of the run, as the prober
	// delivered them.
	Seconds []Second `json:"seconds"`
	// Totals are the prober's report totals; nil until the prober stopped.
	Totals *Totals `json:"totals,omitempty"`
}

// Counts are requests by outcome class (see probe.Class).
type Counts struct {
	Requests       int64 `json:"requests"`
	OK             int64 `json:"ok"`
	DrainSignals   int64 `json:"drain_signals"`
	AppErrors      int64 `json:"app_errors"`
	ReachedNothing int64 `json:"reached_nothing"`
	ProbeErrors    int64 `json:"probe_errors"`
	LateSends      int64 `json:"late_sends"`
	Unsent         int64 `json:"unsent"`
}

// Second is one second of the prober's run.
type Second struct {
	// Second is the 0-based second of the run.
	Second int `json:"second"`
	Counts
	// P50Ms, P99Ms and MaxMs are the second's latency from due time, in ms.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// Versions counts answers by the X-Mythex-Version they carried.
	Versions map[string]int64 `json:"versions,omitempty"`
}

// Totals are the prober's whole-run figures.
type Totals struct {
	Counts
	// P50Ms, P99Ms and MaxMs are the run's latency from due time, in ms.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// Reasons break down every request that was not a plain ok.
	Reasons []Reason `json:"reasons,omitempty"`
}

// Reason counts requests that ended one way, e.g. reached_nothing /
// lb-marked 503 no-targets.
type Reason struct {
	Class string `json:"class"`
	What  string `json:"what"`
	Count int64  `json:"count"`
}

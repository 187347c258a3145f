package probe

import (
	"encoding/json"
	"sort"
	"time"
)

// Report is the result of a probe run. Every request sent has exactly one
// class: OK + ReachedNothing + AppErrors + DrainSignals + ProbeErrors ==
// Requests. Requests + Unsent is the number of requests the schedule held
// until the run stopped.
//
// It marshals to the JSON `mythex measure --json` prints: counts under
// snake_case names, durations in milliseconds (latency_ms, …) or seconds
// (elapsed_seconds).
type Report struct {
	// URL is the URL probed.
	URL string
	// Rate is the schedule's rate in requests per second.
	Rate float64
	// StartedAt is when request 0 was due.
	StartedAt time.Time
	// Elapsed is from StartedAt until the run stopped sending.
	Elapsed time.Duration
	// MaxInFlight is the in-flight bound used.
	MaxInFlight int

	// Requests is the number of requests sent.
	Requests int64
	// ReachedNothing counts requests that reached no application (the 502s).
	ReachedNothing int64
	// AppErrors counts 5xx answered by the application.
	AppErrors int64
	// DrainSignals counts 503s from the health path.
	DrainSignals int64
	// OK counts every other response.
	OK int64
	// ProbeErrors counts requests the prober itself failed (see ClassProbeError).
	ProbeErrors int64
	// LateSends counts requests that left more than Config.LateTolerance
	// after their due time. They are still measured from the due time.
	LateSends int64
	// Unsent counts requests not sent because MaxInFlight requests were in
	// flight. A run with Unsent > 0 is incomplete.
	Unsent int64
	// MaxSendLag is the largest lag of a send behind its due time.
	MaxSendLag time.Duration
	// NewConns counts connections the prober dialed. With keep-alive working
	// it stays near the number of requests in flight at once; a value near
	// Requests means every request paid for a new connection (e.g. a draining
	// server answering with Connection: close).
	NewConns int64

	// Latency is measured from each request's due time to its end: what a
	// user arriving on schedule waited (no coordinated omission). Probe
	// errors are not included; timeouts count as Config.Timeout.
	Latency Latency
	// SendLatency is measured from the actual send instead.
	SendLatency Latency

	// Reasons breaks down every result that was not a plain ok response.
	// Sorted by count, largest first.
	Reasons []ReasonCount
	// Versions and Hosts count responses by their X-Mythex-Version and
	// X-Mythex-Host headers (at most 256 keys; the rest under "(other)").
	Versions map[string]int64
	Hosts    map[string]int64
	// ErrorSamples holds the first few distinct transport error messages.
	ErrorSamples []string

	// Command is set by callers that probe while a command runs (mythex
	// measure -- COMMAND); nil otherwise.
	Command *CommandResult

	// Buckets holds one entry per second of the run, by the second each
	// request was due in.
	Buckets []Bucket
}

// Latency is a latency distribution summary (HdrHistogram, 3 significant
// digits, 1 µs resolution). It marshals to milliseconds:
// {"p50","p90","p99","p99_9","max","mean"}.
type Latency struct {
	P50, P90, P99, P999, Max, Mean time.Duration
}

// Bucket is one second of a run: the requests that were due in it, by class,
// and the versions and hosts that answered (at most 32 of each; the rest under
// "(other)").
type Bucket struct {
	// Second is the 0-based second of the run.
	Second         int
	Requests       int64
	OK             int64
	ReachedNothing int64
	AppErrors      int64
	DrainSignals   int64
	ProbeErrors    int64
	LateSends      int64
	Unsent         int64
	// MaxLatency is the largest latency from due time among this second's requests.
	MaxLatency time.Duration
	// P50Latency and P99Latency are this second's latency quantiles from
	// due time (2 significant digits; at most MaxLatency). Probe errors are
	// not included.
	P50Latency, P99Latency time.Duration
	Versions               map[string]int64
	Hosts                  map[string]int64
}

// ReasonCount counts results with one class, reason, status and detail.
type ReasonCount struct {
	Class  Class
	Reason Reason
	// Status is the HTTP status, 0 when no response arrived.
	Status int
	// Detail is the LB marker (X-Mythex-Lb) or Server header of an
	// LB-generated response; empty otherwise.
	Detail string
	Count  int64
}

// CommandResult says how the command run alongside the probe ended.
type CommandResult struct {
	// Argv is the command and its arguments, run directly (no shell).
	Argv []string
	// ExitCode is the command's exit status; -1 when it did not exit normally
	// (killed by a signal, or could not be waited for).
	ExitCode int
	// Error describes a failure to exit 0 (e.g. "exit status 3",
	// "signal: killed"); empty on success.
	Error string
	// Elapsed is how long the command ran.
	Elapsed time.Duration
}

// Complete reports whether every scheduled request was sent and run by the
// prober without a fault of its own (no Unsent, no ProbeErrors).
func (r *Report) Complete() bool { return r.Unsent == 0 && r.ProbeErrors == 0 }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MarshalJSON renders durations in milliseconds.
func (l Latency) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		P50  float64 `json:"p50"`
		P90  float64 `json:"p90"`
		P99  float64 `json:"p99"`
		P999 float64 `json:"p99_9"`
		Max  float64 `json:"max"`
		Mean float64 `json:"mean"`
	}{ms(l.P50), ms(l.P90), ms(l.P99), ms(l.P999), ms(l.Max), ms(l.Mean)})
}

// MarshalJSON renders the bucket with snake_case keys.
func (b Bucket) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Second         int              `json:"second"`
		Requests       int64            `json:"requests"`
		OK             int64            `json:"ok"`
		ReachedNothing int64            `json:"reached_nothing"`
		AppErrors      int64            `json:"app_errors"`
		DrainSignals   int64            `json:"drain_signals"`
		ProbeErrors    int64            `json:"probe_errors"`
		LateSends      int64            `json:"late_sends"`
		Unsent         int64            `json:"unsent"`
		MaxLatencyMs   float64          `json:"max_latency_ms"`
		P50LatencyMs   float64          `json:"p50_latency_ms"`
		P99LatencyMs   float64          `json:"p99_latency_ms"`
		Versions       map[string]int64 `json:"versions"`
		Hosts          map[string]int64 `json:"hosts"`
	}{b.Second, b.Requests, b.OK, b.ReachedNothing, b.AppErrors, b.DrainSignals, b.ProbeErrors,
		b.LateSends, b.Unsent, ms(b.MaxLatency), ms(b.P50Latency), ms(b.P99Latency), nonNil(b.Versions), nonNil(b.Hosts)})
}

// MarshalJSON renders the count with class and reason names.
func (c ReasonCount) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Class  string `json:"class"`
		Reason string `json:"reason"`
		Status int    `json:"status,omitempty"`
		Detail string `json:"detail,omitempty"`
		Count  int64  `json:"count"`
	}{c.Class.String(), c.Reason.String(), c.Status, c.Detail, c.Count})
}

// MarshalJSON renders the command result; elapsed in seconds.
func (c CommandResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Argv           []string `json:"argv"`
		ExitCode       int      `json:"exit_code"`
		Error          string   `json:"error,omitempty"`
		ElapsedSeconds float64  `json:"elapsed_seconds"`
	}{c.Argv, c.ExitCode, c.Error, c.Elapsed.Seconds()})
}

// MarshalJSON renders the report as mythex measure --json prints it.
func (r Report) MarshalJSON() ([]byte, error) {
	buckets := r.Buckets
	if buckets == nil {
		buckets = []Bucket{}
	}
	reasons := r.Reasons
	if reasons == nil {
		reasons = []ReasonCount{}
	}
	samples := r.ErrorSamples
	if samples == nil {
		samples = []string{}
	}
	return json.Marshal(struct {
		URL            string           `json:"url"`
		Rate           float64          `json:"rate"`
		StartedAt      time.Time        `json:"started_at"`
		ElapsedSeconds float64          `json:"elapsed_seconds"`
		MaxInFlight    int              `json:"max_in_flight"`
		Requests       int64            `json:"requests"`
		ReachedNothing int64            `json:"reached_nothing"`
		AppErrors      int64            `json:"app_errors"`
		DrainSignals   int64            `json:"drain_signals"`
		OK             int64            `json:"ok"`
		LateSends      int64            `json:"late_sends"`
		Unsent         int64            `json:"unsent"`
		ProbeErrors    int64            `json:"probe_errors"`
		MaxSendLagMs   float64          `json:"max_send_lag_ms"`
		NewConns       int64            `json:"new_conns"`
		Latency        Latency          `json:"latency_ms"`
		SendLatency    Latency          `json:"send_latency_ms"`
		Reasons        []ReasonCount    `json:"reasons"`
		Versions       map[string]int64 `json:"versions"`
		Hosts          map[string]int64 `json:"hosts"`
		ErrorSamples   []string         `json:"error_samples"`
		Command        *CommandResult   `json:"command"`
		Buckets        []Bucket         `json:"buckets"`
	}{r.URL, r.Rate, r.StartedAt, r.Elapsed.Seconds(), r.MaxInFlight,
		r.Requests, r.ReachedNothing, r.AppErrors, r.DrainSignals, r.OK, r.LateSends, r.Unsent, r.ProbeErrors,
		ms(r.MaxSendLag), r.NewConns, r.Latency, r.SendLatency, reasons, nonNil(r.Versions), nonNil(r.Hosts), samples,
		r.Command, buckets})
}

func nonNil(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}

// sortReasons orders by count (largest first), then by class, reason, status
// and detail so output is stable.
func sortReasons(rs []ReasonCount) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.Class != b.Class {
			return a.Class < b.Class
		}
		if a.Reason != b.Reason {
			return a.Reason < b.Reason
		}
		if a.Status != b.Status {
			return a.Status < b.Status
		}
		return a.Detail < b.Detail
	})
}

package runtime

import (
	"bytes"
	"time"

	"github.com/mythex/mythex/internal/definition"
)

// HealthStatus is an instance's health, with Docker's names.
type HealthStatus string

// Health states, as Docker reports them (State.Health.Status).
const (
	// HealthNone: the instance has no healthcheck, or is not running.
	HealthNone HealthStatus = "none"
	// HealthStarting: no check has passed yet and too few have failed.
	HealthStarting HealthStatus = "starting"
	// HealthHealthy: the last check passed.
	HealthHealthy HealthStatus = "healthy"
	// HealthUnhealthy: Retries consecutive checks failed outside the start
	// period.
	HealthUnhealthy HealthStatus = "unhealthy"
)

// MaxHealthLog is how many check results Health keeps, as Docker keeps 5.
const MaxHealthLog = 5

// Health is an instance's health and its latest checks, as Docker's
// State.Health.
type Health struct {
	// Status is none, starting, healthy or unhealthy.
	Status HealthStatus `json:"status"`
	// FailingStreak is the number of consecutive failed checks that counted
	// (failures inside the start period before any success do not).
	FailingStreak int `json:"failing_streak"`
	// Log holds the latest MaxHealthLog results, oldest first.
	Log []CheckResult `json:"log,omitempty"`
}

// CheckResult is one health check.
type CheckResult struct {
	// Start is when the check began.
	Start time.Time `json:"start"`
	// End is when it finished.
	End time.Time `json:"end"`
	// OK is whether it passed: HTTP 2xx/3xx, or exit status 0.
	OK bool `json:"ok"`
	// ExitCode is the check command's exit status, or for an HTTP check the
	// response status code; -1 when it could not run or timed out.
	ExitCode int `json:"exit_code"`
	// Output is the start of the command's output or response body, or why
	// the check could not run (at most MaxCheckOutput bytes).
	Output string `json:"output,omitempty"`
}

// MaxCheckOutput bounds CheckResult.Output, as Docker keeps 4 KiB.
const MaxCheckOutput = 4096

// OutputBuffer is an io.Writer for a check's stdout and stderr: it keeps the
// first MaxCheckOutput bytes written to it, as Docker does, and takes (and
// drops) the rest without failing, so the check never blocks on its output.
// The zero value is ready to use.
type OutputBuffer struct{ buf bytes.Buffer }

// Write keeps what still fits and reports all of p written.
func (o *OutputBuffer) Write(p []byte) (int, error) {
	if room := MaxCheckOutput - o.buf.Len(); room > 0 {
		o.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Len is the number of bytes kept.
func (o *OutputBuffer) Len() int { return o.buf.Len() }

// String returns the bytes kept.
func (o *OutputBuffer) String() string { return o.buf.String() }

// CapOutput cuts s to MaxCheckOutput bytes.
func CapOutput(s string) string { return s[:min(len(s), MaxCheckOutput)] }

// InitialHealth is the health of an instance that just started: starting,
// or none without a healthcheck.
func InitialHealth(hc *definition.Healthcheck) Health {
	if hc == nil {
		return Health{Status: HealthNone}
	}
	return Health{Status: HealthStarting}
}

// NextHealth applies one check result to h, with Docker's rules: a pass makes
// the instance healthy and resets the failing streak; a failure counts toward
// the streak unless the instance is still starting inside its start period
// (sinceStart < StartPeriod and no check has passed yet); Retries counted
// failures in a row make it unhealthy. The result joins the log, which keeps
// the latest MaxHealthLog. h is not modified.
func NextHealth(h Health, r CheckResult, sinceStart time.Duration, hc *definition.Healthcheck) Health {
	next := Health{Status: h.Status, FailingStreak: h.FailingStreak}
	keep := h.Log
	if len(keep) >= MaxHealthLog {
		keep = keep[len(keep)-MaxHealthLog+1:]
	}
	next.Log = append(append(make([]CheckResult, 0, MaxHealthLog), keep...), r)
	if r.OK {
		next.Status = HealthHealthy
		next.FailingStreak = 0
		return next
	}
	if h.Status == HealthStarting && sinceStart < hc.StartPeriod {
		return next
	}
	next.FailingStreak++
	if next.FailingStreak >= hc.Retries {
		next.Status = HealthUnhealthy
	}
	return next
}

// NextCheckDelay is how long to wait before the next check: StartInterval
// while the instance is starting inside its start period, Interval otherwise
// (Docker's start_interval).
func NextCheckDelay(h Health, sinceStart time.Duration, hc *definition.Healthcheck) time.Duration {
	if h.Status == HealthStarting && sinceStart < hc.StartPeriod {
		return hc.StartInterval
	}
	return hc.Interval
}

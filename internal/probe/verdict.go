package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Grade is what a measurement says about the deploy it watched.
type Grade int

// Outcomes, in the order `mythex measure` maps them to exit codes 0, 1, 3.
const (
	// Pass: no more requests reached nothing than allowed, and the command
	// (if any) succeeded.
	Pass Grade = iota
	// Fail: too many requests reached nothing, or the command failed.
	Fail
	// Incomplete: nothing failed, but the measurement did not cover what it
	// should (interrupted, probe errors, unsent requests).
	Incomplete
)

// String is the outcome as `mythex measure --json` gives it: pass, fail or
// incomplete.
func (g Grade) String() string {
	switch g {
	case Pass:
		return "pass"
	case Fail:
		return "fail"
	}
	return "incomplete"
}

// Verdict is a measurement's outcome and why.
type Verdict struct {
	Grade Grade
	// Message says why, naming the counts.
	Message string
}

// Line is the verdict as the text output's last line: "PASS: 0 of 100 ...".
func (v Verdict) Line() string {
	return strings.ToUpper(v.Grade.String()) + ": " + v.Message
}

// Judge decides a report's verdict: failures (requests that reached nothing
// beyond maxDropped, a failed command) → Fail; else a measurement that could
// not cover what it should (interrupted, probe errors, unsent requests) →
// Incomplete; else Pass.
func Judge(r *Report, maxDropped int64, interrupted bool) Verdict {
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
		return Verdict{Fail, strings.Join(fails, "; ")}
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
		return Verdict{Incomplete, fmt.Sprintf("%d of %d requests reached nothing, but the measurement is incomplete: %s",
			r.ReachedNothing, r.Requests, strings.Join(gaps, "; "))}
	}
	return Verdict{Pass, fmt.Sprintf("%d of %d requests reached nothing (allowed %d)", r.ReachedNothing, r.Requests, maxDropped)}
}

// JudgedReport is `mythex measure --json`: the report's fields, then the
// verdict's, so CI reads the verdict the exit code carries from the JSON too.
type JudgedReport struct {
	Report     Report
	Verdict    Verdict
	MaxDropped int64
}

// verdictJSON is the verdict part of JudgedReport's JSON.
type verdictJSON struct {
	// Verdict is pass (exit 0), fail (exit 1) or incomplete (exit 3).
	Verdict string `json:"verdict"`
	// Reason says why, as the text output's last line does.
	Reason string `json:"verdict_reason"`
	// MaxDropped is --max-dropped: requests allowed to reach nothing.
	MaxDropped int64 `json:"max_dropped"`
}

// MarshalJSON is the report's JSON object with the verdict's fields
// (verdict, verdict_reason, max_dropped) appended.
func (m JudgedReport) MarshalJSON() ([]byte, error) {
	rep, err := json.Marshal(m.Report)
	if err != nil {
		return nil, err
	}
	extra, err := json.Marshal(verdictJSON{Verdict: m.Verdict.Grade.String(), Reason: m.Verdict.Message, MaxDropped: m.MaxDropped})
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

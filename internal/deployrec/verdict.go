package deployrec

import (
	"fmt"
	"strings"
)

// Verdict is a report's judgement of one deploy (or of a whole recording)
// in words.
type Verdict struct {
	// OK is false when a request reached nothing or the deploy failed.
	OK bool
	// Dropped is true when a request reached nothing (the headline's
	// judgement); Failed when a deploy failed or did not finish (the
	// outcome's).
	Dropped, Failed bool
	// Headline is one sentence, e.g. "0 of 2,657 requests reached nothing".
	Headline string
	// Outcome says how the deploy ended, e.g. "v1 → v2 deployed to 3 hosts
	// and verified in 8.4 s"; empty for a measurement alone.
	Outcome string
}

// Judge is the verdict on d. It is a pure function of the recording.
func Judge(d Deploy) Verdict {
	v := Verdict{OK: true}
	if d.Probe != nil {
		c := d.Probe.counts()
		v.Headline = reachedNothing(c.ReachedNothing, c.Requests)
		v.Dropped = c.ReachedNothing > 0
		v.OK = !v.Dropped
	}
	if d.Version != "" {
		v.Outcome = outcome(d)
		if d.Result == nil || !d.Result.OK {
			v.OK, v.Failed = false, true
		}
		if v.Headline == "" {
			v.Headline = v.Outcome + " (no load was measured)"
			v.Outcome = ""
		}
	}
	if v.Headline == "" {
		v.Headline = "nothing was recorded"
		v.OK = false
	}
	return v
}

// JudgeAll is the verdict on every deploy of rec together: the requests of
// all of them, and OK only when each is.
func JudgeAll(rec Recording) Verdict {
	if len(rec.Deploys) == 1 {
		return Judge(rec.Deploys[0])
	}
	v := Verdict{OK: len(rec.Deploys) > 0}
	var total Counts
	measured, failed := false, 0
	for _, d := range rec.Deploys {
		j := Judge(d)
		v.OK = v.OK && j.OK
		v.Dropped = v.Dropped || j.Dropped
		v.Failed = v.Failed || j.Failed
		if d.Probe != nil {
			measured = true
			c := d.Probe.counts()
			total.Requests += c.Requests
			total.ReachedNothing += c.ReachedNothing
		}
		if d.Version != "" && (d.Result == nil || !d.Result.OK) {
			failed++
		}
	}
	switch {
	case measured:
		v.Headline = fmt.Sprintf("%s across %d deploys", reachedNothing(total.ReachedNothing, total.Requests), len(rec.Deploys))
	case len(rec.Deploys) == 0:
		v.Headline = "nothing was recorded"
	default:
		v.Headline = fmt.Sprintf("%d deploys (no load was measured)", len(rec.Deploys))
	}
	if failed > 0 {
		v.Outcome = fmt.Sprintf("%d of %d deploys failed", failed, len(rec.Deploys))
	} else if len(rec.Deploys) > 0 {
		v.Outcome = fmt.Sprintf("all %d deploys succeeded", len(rec.Deploys))
	}
	return v
}

// counts are the prober's totals, or the sum of its seconds before it
// stopped.
func (p *Probe) counts() Counts {
	if p.Totals != nil {
		return p.Totals.Counts
	}
	var c Counts
	for _, s := range p.Seconds {
		c.Requests += s.Requests
		c.ReachedNothing += s.ReachedNothing
	}
	return c
}

func reachedNothing(n, of int64) string {
	s := fmt.Sprintf("%s of %s requests reached nothing", Thousands(n), Thousands(of))
	if n > 0 && of > 0 {
		s += fmt.Sprintf(" (%.2g %%)", 100*float64(n)/float64(of))
	}
	return s
}

func outcome(d Deploy) string {
	what := d.Version
	if d.From != "" {
		what = d.From + " → " + d.Version
	}
	res := d.Result
	switch {
	case res == nil:
		return what + " did not finish recording"
	case res.OK:
		return fmt.Sprintf("%s deployed to %d hosts and verified in %.1f s", what, len(res.Hosts), res.Seconds)
	}
	var rolled []string
	for _, h := range res.Hosts {
		if h.RolledBack {
			rolled = append(rolled, h.Host)
		}
	}
	s := what + " FAILED: " + firstLine(res.Error)
	if len(rolled) > 0 && !strings.Contains(s, "rolled back") {
		s += "; rolled back: " + strings.Join(rolled, ", ")
	}
	return s
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Thousands writes n with comma thousands separators: 2657 → "2,657".
func Thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

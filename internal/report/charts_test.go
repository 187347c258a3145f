package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/deploy"
)

// TestPhaseSpans: every phase a deploy reports becomes a span of the host's
// Gantt row, including the waits it reports without a begin (the capacity
// wait before a batch is drained, labelled with the whole batch; the
// recheck), which span their elapsed time back from their end.
func TestPhaseSpans(t *testing.T) {
	a := newAxis(t0, t0.Add(20*time.Second))
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ev := func(s float64, host string, p deploy.Phase, k deploy.EventKind, elapsed float64) deploy.Event {
		return deploy.Event{At: at(s), Host: host, Phase: p, Kind: k, Elapsed: elapsed}
	}
	cases := []struct {
		name   string
		events []deploy.Event
		want   []string // "host phase from–to [failed]"
	}{
		{"begin and end", []deploy.Event{
			ev(1, "web-1", deploy.PhaseDrain, deploy.EventBegin, 0),
			ev(3, "web-1", deploy.PhaseDrain, deploy.EventEnd, 2),
		}, []string{"web-1 drain 1–3"}},
		{"a phase never ended runs to the axis end", []deploy.Event{
			ev(4, "web-1", deploy.PhaseStop, deploy.EventBegin, 0),
		}, []string{"web-1 stop 4–20"}},
		{"a failed phase", []deploy.Event{
			ev(4, "web-1", deploy.PhaseVerify, deploy.EventBegin, 0),
			ev(6, "web-1", deploy.PhaseVerify, deploy.EventFail, 2),
		}, []string{"web-1 verify 4–6 failed"}},
		{"capacity wait of a batch: drawn on each of its hosts", []deploy.Event{
			ev(2, "web-2,web-3", deploy.PhaseCapacity, deploy.EventProgress, 1),
			ev(5.5, "web-2,web-3", deploy.PhaseCapacity, deploy.EventEnd, 4.5),
		}, []string{"web-2 capacity 1–5.5", "web-3 capacity 1–5.5"}},
		{"capacity wait without progress: from its elapsed time", []deploy.Event{
			ev(7, "web-2", deploy.PhaseCapacity, deploy.EventEnd, 2.5),
		}, []string{"web-2 capacity 4.5–7"}},
		{"capacity wait that failed", []deploy.Event{
			ev(9, "web-1", deploy.PhaseCapacity, deploy.EventFail, 8),
		}, []string{"web-1 capacity 1–9 failed"}},
		{"capacity wait still going when the recording ended", []deploy.Event{
			ev(12, "web-2,web-3", deploy.PhaseCapacity, deploy.EventProgress, 2),
			ev(14, "web-2,web-3", deploy.PhaseCapacity, deploy.EventProgress, 4),
		}, []string{"web-2 capacity 10–20", "web-3 capacity 10–20"}},
		{"recheck of the fleet", []deploy.Event{
			ev(8, "", deploy.PhaseRecheck, deploy.EventEnd, 0.5),
		}, []string{" recheck 7.5–8"}},
		{"progress of a phase with a begin adds nothing", []deploy.Event{
			ev(1, "web-1", deploy.PhaseStop, deploy.EventBegin, 0),
			ev(2.5, "web-1", deploy.PhaseStop, deploy.EventProgress, 1.5),
			ev(3, "web-1", deploy.PhaseStop, deploy.EventEnd, 2),
			ev(4, "web-1", deploy.PhaseLease, deploy.EventProgress, 3),
		}, []string{"web-1 stop 1–3"}},
		{"an end without a begin nor elapsed time is dropped", []deploy.Event{
			ev(3, "web-1", deploy.PhaseDrain, deploy.EventEnd, 0),
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, s := range phaseSpans(a, c.events) {
				g := fmt.Sprintf("%s %s %g–%g", s.host, s.phase, round3(s.from), round3(s.to))
				if s.failed {
					g += " failed"
				}
				got = append(got, g)
			}
			if strings.Join(got, "; ") != strings.Join(c.want, "; ") {
				t.Errorf("spans %q, want %q", got, c.want)
			}
		})
	}
}

// TestWrite_CapacityWait: the wait for deploy.min_in_service capacity
// before a batch is drained is drawn in each of the batch's Gantt rows, and
// named in the legend.
func TestWrite_CapacityWait(t *testing.T) {
	rec := synthetic(3, 30, 50, -1)
	d := &rec.Deploys[0]
	d.Events = append(d.Events, deploy.Event{At: t0.Add(12 * time.Second), Host: "web-2,web-3", Phase: deploy.PhaseCapacity,
		Kind: deploy.EventEnd, Elapsed: 3, Detail: "2 of 3 targets in service (need 1)"})
	var buf bytes.Buffer
	if err := Write(&buf, rec); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, host := range []string{"web-2", "web-3"} {
		row := out[strings.Index(out, `data-row="`+host+`"`):]
		row = row[:strings.Index(row, "</g>")]
		if !strings.Contains(row, `class="seg ph ph-capacity"`) || !strings.Contains(row, host+" capacity took 3.00s (") {
			t.Errorf("the Gantt row of %s has no capacity wait:\n%s", host, row)
		}
	}
	if !strings.Contains(out, `<i class="k ph-capacity"></i>capacity wait`) {
		t.Error("the legend does not name the capacity wait")
	}
}

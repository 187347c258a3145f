package probe

import (
	"strings"
	"testing"
	"time"
)

func TestTimelineLine(t *testing.T) {
	b := Bucket{Second: 12, Requests: 500, OK: 490, ReachedNothing: 6, AppErrors: 3, DrainSignals: 1, LateSends: 2,
		MaxLatency: 3250 * time.Microsecond, Versions: map[string]int64{"v2": 300, "v1": 200}, Hosts: map[string]int64{"web-1": 500}}
	plain := TimelineLine(b, Style{})
	for _, want := range []string{"    12", "   500", "   490", "       6", "3.25", "v1=200 v2=300 | web-1=500"} {
		if !strings.Contains(plain, want) {
			t.Errorf("line %q lacks %q", plain, want)
		}
	}
	if strings.Contains(plain, "\x1b[") {
		t.Errorf("plain line has ANSI codes: %q", plain)
	}
	colored := TimelineLine(b, Style{Color: true})
	if !strings.Contains(colored, ansiRed+"       6"+ansiReset) {
		t.Errorf("colored line does not paint reached-nothing red: %q", colored)
	}
	quiet := TimelineLine(Bucket{Second: 1, Requests: 5, OK: 5}, Style{Color: true})
	if strings.Contains(quiet, "\x1b[") {
		t.Errorf("a clean second is painted: %q", quiet)
	}
	if got := TimelineLine(Bucket{ProbeErrors: 2}, Style{}); !strings.Contains(got, "(2 probe errors)") {
		t.Errorf("probe errors not shown: %q", got)
	}
	if len(strings.Fields(TimelineHeader())) < 9 {
		t.Errorf("header %q", TimelineHeader())
	}
}

func TestWriteSummary(t *testing.T) {
	r := &Report{URL: "http://lb/", Rate: 500, Elapsed: 30 * time.Second, Requests: 15000, OK: 14990, ReachedNothing: 10,
		Reasons: []ReasonCount{
			{Class: ClassReachedNothing, Reason: ReasonRefused, Count: 6},
			{Class: ClassReachedNothing, Reason: ReasonLBMarked, Status: 502, Detail: "target-refused", Count: 4},
		},
		LateSends: 3, Versions: map[string]int64{"v1": 15000},
		Command: &CommandResult{Argv: []string{"deploy", "web"}, ExitCode: 0, Elapsed: 12 * time.Second}}
	var b strings.Builder
	if err := WriteSummary(&b, r, Style{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"http://lb/ at 500 req/s for 30s",
		"reached nothing",
		"refused ×6, lb-marked 502 target-refused ×4",
		"0.02% left behind schedule",
		"v1 ×15000",
		"exit 0 after 12s: deploy web",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

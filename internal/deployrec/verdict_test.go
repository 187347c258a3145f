package deployrec

import (
	"testing"

	"github.com/mythex/mythex/internal/deploy"
)

func TestJudge(t *testing.T) {
	probed := func(n, of int64) *Probe {
		return &Probe{Totals: &Totals{Counts: Counts{Requests: of, ReachedNothing: n}}}
	}
	ok := &Result{OK: true, Seconds: 8.44, Hosts: make([]deploy.HostResult, 3)}
	failed := &Result{Error: "host web-2 failed at verify: boom\nmore", Hosts: []deploy.HostResult{{Host: "web-1", OK: true}, {Host: "web-2", RolledBack: true}}}
	cases := []struct {
		name         string
		d            Deploy
		ok           bool
		head, result string
	}{
		{"clean deploy under load", Deploy{From: "v1", Version: "v2", Probe: probed(0, 2657), Result: ok}, true,
			"0 of 2,657 requests reached nothing", "v1 → v2 deployed to 3 hosts and verified in 8.4 s"},
		{"drops fail the verdict", Deploy{From: "v1", Version: "v2", Probe: probed(37, 2657), Result: ok}, false,
			"37 of 2,657 requests reached nothing (1.4 %)", "v1 → v2 deployed to 3 hosts and verified in 8.4 s"},
		{"a failed deploy fails the verdict", Deploy{From: "v1", Version: "v2", Probe: probed(0, 900), Result: failed}, false,
			"0 of 900 requests reached nothing", "v1 → v2 FAILED: host web-2 failed at verify: boom; rolled back: web-2"},
		{"deploy without load", Deploy{Version: "v2", Result: ok}, true,
			"v2 deployed to 3 hosts and verified in 8.4 s (no load was measured)", ""},
		{"deploy that never ended", Deploy{Version: "v2", Probe: probed(0, 10)}, false,
			"0 of 10 requests reached nothing", "v2 did not finish recording"},
		{"measurement alone", Deploy{Probe: probed(2, 15000)}, false, "2 of 15,000 requests reached nothing (0.013 %)", ""},
		{"empty", Deploy{}, false, "nothing was recorded", ""},
		{"prober still running: seconds count", Deploy{Probe: &Probe{Seconds: []Second{{Counts: Counts{Requests: 1000}}, {Counts: Counts{Requests: 500, ReachedNothing: 1}}}}}, false,
			"1 of 1,500 requests reached nothing (0.067 %)", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Judge(c.d)
			if v.OK != c.ok || v.Headline != c.head || v.Outcome != c.result {
				t.Errorf("Judge = %+v\nwant ok=%v headline %q outcome %q", v, c.ok, c.head, c.result)
			}
		})
	}
}

func TestJudgeAll(t *testing.T) {
	d := func(n, of int64, ok bool) Deploy {
		return Deploy{Version: "v", Probe: &Probe{Totals: &Totals{Counts: Counts{Requests: of, ReachedNothing: n}}}, Result: &Result{OK: ok}}
	}
	cases := []struct {
		name          string
		rec           Recording
		ok            bool
		head, outcome string
	}{
		{"sums every deploy", Recording{Deploys: []Deploy{d(0, 1000, true), d(3, 2000, true)}}, false,
			"3 of 3,000 requests reached nothing (0.1 %) across 2 deploys", "all 2 deploys succeeded"},
		{"counts failures", Recording{Deploys: []Deploy{d(0, 1000, true), d(0, 1000, false)}}, false,
			"0 of 2,000 requests reached nothing across 2 deploys", "1 of 2 deploys failed"},
		{"nothing", Recording{}, false, "nothing was recorded", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := JudgeAll(c.rec)
			if v.OK != c.ok || v.Headline != c.head || v.Outcome != c.outcome {
				t.Errorf("JudgeAll = %+v\nwant ok=%v headline %q outcome %q", v, c.ok, c.head, c.outcome)
			}
		})
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 2657: "2,657", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

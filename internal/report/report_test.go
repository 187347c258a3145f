package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/deployrec"
)

// artifactDir is where tests leave reports and screenshots for people to
// look at: $MYTHEX_ARTIFACTS when set, else a test temporary directory.
func artifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("MYTHEX_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func TestWrite_Synthetic(t *testing.T) {
	for _, c := range []struct {
		name string
		fail int
	}{{"ok", -1}, {"failed", 1}} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, synthetic(3, 60, 200, c.fail)); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			path := filepath.Join(artifactDir(t), "synthetic-"+c.name+".html")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("report: %s (%d bytes)", path, buf.Len())
			for _, want := range []string{`data-chart="requests"`, `data-chart="phases"`, `data-chart="targets"`, `data-chart="versions"`, `data-chart="latency"`} {
				if !strings.Contains(out, want) {
					t.Errorf("report lacks %s", want)
				}
			}
		})
	}
}

// TestWrite_FailedDeploy: a host that failed verify and was rolled back,
// with requests reaching nothing meanwhile, is impossible to miss: the
// verdict is red and says it, the failed phase is outlined, the failed
// host's row label marked, a line at the failure crosses every chart and is
// labelled in the Gantt chart, the rollback drawn, the hosts never reached
// say so, and the reached-nothing seconds are marked in their strip with
// counts.
func TestWrite_FailedDeploy(t *testing.T) {
	rec := synthetic(3, 60, 200, 1)
	var buf bytes.Buffer
	if err := Write(&buf, rec); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	rn := rec.Deploys[0].Probe.Totals.ReachedNothing
	for _, want := range []string{
		`<h1 id="verdict" class="bad">` + deployrec.Thousands(rn) + ` of 12,000 requests reached nothing`,
		`<p class="outcome bad">✗ v1 → v2 FAILED: host web-2 failed at verify`,
		`class="seg ph ph-verify failed"`,
		`class="seg ph ph-rollback"`,
		`class="c rn mark"`,
		`reached nothing: ` + deployrec.Thousands(rn),
		`class="count bad" data-count="reached_nothing"`,
		`<text class="rowlab failed" x="112" y="65">✗ web-2</text>`,
		`<text class="faillab"`,
		`>✗ web-2 failed at verify</text>`,
		`<text class="lanenote" x="120" dx="8" y="91">not reached: the deploy stopped before this host</text>`,
		`<tr class="not-reached"><td>web-3</td>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(out, `<line class="failline"`); n != 5 {
		t.Errorf("%d failure lines, want one across each of the 5 charts", n)
	}
}

// TestWrite_SizeBound: a 10-minute deploy of 20 hosts measured every second
// stays under MaxBytes.
func TestWrite_SizeBound(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, synthetic(20, 600, 5000, 7)); err != nil {
		t.Fatal(err)
	}
	if buf.Len() >= MaxBytes {
		t.Errorf("%d bytes, want < %d", buf.Len(), MaxBytes)
	}
}

// TestWrite_EscapesHostileNames: names from configs and services reach the
// page escaped, in text, attributes and the hover data.
func TestWrite_EscapesHostileNames(t *testing.T) {
	rec := synthetic(2, 10, 10, -1)
	evil := `web"><script>alert(1)</script>`
	d := &rec.Deploys[0]
	for i := range d.Events {
		if d.Events[i].Host == "web-1" {
			d.Events[i].Host = evil
		}
	}
	d.Hosts[0] = evil
	d.Probe.Seconds[3].Versions = map[string]int64{`</script><script>alert(2)</script>`: 1}
	var buf bytes.Buffer
	if err := Write(&buf, rec); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); strings.Contains(out, "<script>alert") {
		t.Errorf("a hostile name reached the page unescaped")
	}
}

func TestWrite_Empty(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, deployrec.Recording{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "nothing was recorded") {
		t.Error("an empty recording does not say so")
	}
}

func TestNiceStep(t *testing.T) {
	for raw, want := range map[float64]float64{0: 1, 0.3: 0.5, 1: 1, 1.4: 2, 4: 5, 7: 10, 12: 15, 45: 60, 100: 120} {
		if got := niceStep(raw); got != want {
			t.Errorf("niceStep(%v) = %v, want %v", raw, got, want)
		}
	}
}

// TestWrite_FailedDeployDroppingNothing: a failed deploy that dropped
// nothing (mythex rolled back in time) keeps a green headline; the outcome
// line says it failed.
func TestWrite_FailedDeployDroppingNothing(t *testing.T) {
	rec := synthetic(3, 60, 200, 1)
	d := &rec.Deploys[0]
	for i := range d.Probe.Seconds {
		d.Probe.Seconds[i].OK += d.Probe.Seconds[i].ReachedNothing
		d.Probe.Seconds[i].ReachedNothing = 0
	}
	d.Probe.Totals.OK += d.Probe.Totals.ReachedNothing
	d.Probe.Totals.ReachedNothing = 0
	var buf bytes.Buffer
	if err := Write(&buf, rec); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{`<h1 id="verdict" class="good">0 of 12,000 requests reached nothing`, `<p class="outcome bad">✗ v1 → v2 FAILED`} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

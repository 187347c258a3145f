package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/demo"
	"github.com/mythex/mythex/internal/testbin"
)

// TestDeploy_MeasureReport: deploy --measure --rate --report --json on a
// local fleet of real processes runs the prober through the deploy, streams
// its seconds beside the deploy's events (target changes included), and
// writes the HTML report; the deploy's recording is kept on its hosts, and
// history --report draws the same report from it.
func TestDeploy_MeasureReport(t *testing.T) {
	t.Parallel()              // its own processes, ports and directories
	testbin.FleetSlotFirst(t) // ahead of e2e's: while it waits, cmd/mythex holds one of go test's two slots idle
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f, dir := startSuiteFleet(ctx, t, 2)
	if _, err := f.FirstRollout(ctx, "v1"); err != nil {
		t.Fatalf("first rollout: %v", err)
	}
	agentTok, lbTok := filepath.Join(dir, "agent.token"), filepath.Join(dir, "lb.token")
	if err := os.WriteFile(agentTok, []byte(f.AgentToken), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lbTok, []byte(f.LBToken), 0o600); err != nil {
		t.Fatal(err)
	}
	reportPath := filepath.Join(dir, "deploy.html")
	fl := deployFlags{version: "v2", asJSON: true, agentTokenFile: agentTok, lbTokenFile: lbTok, targetServices: []string{"gateway"},
		report: reportPath, measureURL: f.URL(), rate: 100, rateSet: true}
	if err := checkMeasureFlags(fl); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	res, err := runDeploy(ctx, f.Loaded, fl, &out, &errOut)
	if err != nil || !res.OK {
		t.Fatalf("deploy: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	kinds := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev struct{ Kind string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line is not JSON: %q", line)
		}
		kinds[ev.Kind]++
	}
	if kinds["probe_second"] < 2 || kinds["target"] < 4 || kinds["end"] == 0 {
		t.Errorf("event stream kinds %v: want probe seconds, target changes and phase ends", kinds)
	}
	if !strings.Contains(errOut.String(), `"kind":"probe"`) {
		t.Errorf("no probe summary on stderr:\n%s", errOut.String())
	}
	html, err := os.ReadFile(reportPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"requests reached nothing", `data-chart="targets"`, `data-row="web-1"`, `data-row="v2"`} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}

	// The deploy's recording went to its hosts' agents with its record:
	// history --report draws the same deploy from it, through the agents'
	// API and their SQLite stores.
	fromHistory := filepath.Join(dir, "history.html")
	var hout, herr bytes.Buffer
	if err := runHistory(ctx, f.Loaded, historyFlags{agentTokenFile: agentTok, report: fromHistory, timeout: 30 * time.Second}, &hout, &herr); err != nil {
		t.Fatalf("history --report: %v\n%s\n%s", err, hout.String(), herr.String())
	}
	again, err := os.ReadFile(fromHistory)
	if err != nil {
		t.Fatal(err)
	}
	at, later := reportFigures(html), reportFigures(again)
	if len(at) < 8 || !maps.Equal(at, later) {
		t.Errorf("the report from history differs in its figures:\n at deploy time %v\n from history   %v", at, later)
	}
}

// figureRE finds a report's figures: its headline counts, its seconds and
// hosts, each chart's rows, and its verdict.
var figureRE = regexp.MustCompile(`data-count="([a-z_0-9]+)"><dt>[^<]*</dt><dd>([^<]*)</dd>|data-(seconds|hosts)="(\d+)"|data-chart="([a-z]+)" data-rows="(\d+)"|<h1 id="verdict" class="[a-z]+">([^<]*)</h1>`)

func reportFigures(html []byte) map[string]string {
	out := map[string]string{}
	for _, m := range figureRE.FindAllSubmatch(html, -1) {
		switch {
		case len(m[1]) > 0:
			out["count "+string(m[1])] = string(m[2])
		case len(m[3]) > 0:
			out[string(m[3])] = string(m[4])
		case len(m[5]) > 0:
			out["rows "+string(m[5])] = string(m[6])
		default:
			out["verdict"] = string(m[7])
		}
	}
	return out
}

func TestCheckMeasureFlags(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		f    deployFlags
		want string // "" for no error
	}{
		{"nothing asked", deployFlags{}, ""},
		{"measure and report", deployFlags{measureURL: "http://127.0.0.1:1/", report: filepath.Join(dir, "d.html")}, ""},
		{"rate without measure", deployFlags{rateSet: true}, "--rate applies only with --measure"},
		{"measure without a scheme", deployFlags{measureURL: "127.0.0.1:8080"}, "has no http://"},
		{"report not html", deployFlags{report: filepath.Join(dir, "d.txt")}, "ending in .html"},
		{"report in a missing directory", deployFlags{report: filepath.Join(dir, "nope", "d.html")}, "does not exist"},
		{"report is a directory", deployFlags{report: filepath.Join(dir, "x.html")}, ""},
	}
	if err := os.Mkdir(filepath.Join(dir, "x.html"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases[len(cases)-1].want = "is a directory"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkMeasureFlags(c.f)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !isUsageError(err)):
				t.Errorf("error %v, want a usage error with %q", err, c.want)
			}
		})
	}
}

// startSuiteFleet starts a fleet of real processes (demo.SuiteConfig, hosts
// hosts) in a fresh directory, closed when the test ends; it returns the
// fleet and its directory.
func startSuiteFleet(ctx context.Context, t *testing.T, hosts int) (*demo.Fleet, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: starts a fleet of real processes")
	}
	bin, err := testbin.Build(testbin.Mythex)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := demo.SuiteConfig(0.1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f, err := demo.StartFleet(ctx, demo.FleetOptions{Config: cfg, Hosts: hosts, Exe: bin, AppExe: buildBin(t, testbin.App), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f, dir
}

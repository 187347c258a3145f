package e2e

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
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/history"
	"github.com/mythex/mythex/internal/testbin"
)

// The tests here run mythex commands as a user would from a shell, against a
// fleet of real processes.

// runCLI runs the mythex binary with env (nil: the test's own) and args and
// returns its exit status, stdout and stderr.
func runCLI(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code, err := testbin.Run(mythexBin(t), env, &out, &errOut, args...)
	if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// openSuiteFleet starts a fleet of hosts hosts (demo.SuiteConfig at the
// tests' scale) with nothing deployed on it, closed when the test ends.
func openSuiteFleet(ctx context.Context, t *testing.T, hosts int) *demo.Fleet {
	t.Helper()
	cfg, err := demo.SuiteConfig(testScale)
	if err != nil {
		t.Fatal(err)
	}
	return openFleet(ctx, t, demo.FleetOptions{Config: cfg, Hosts: hosts, Dir: fleetDir(t)})
}

// TestRollbackCmd: on a local fleet of real processes deployed v1 then v2,
// `mythex rollback --to` a version no host keeps any more is refused with
// exit 2 naming the hosts, nothing changed; `mythex rollback` takes the fleet
// back to v1 through the rolling deploy, records v1 as last good, and is in
// every host's history as a rollback.
func TestRollbackCmd(t *testing.T) {
	t.Parallel()              // its own fleet; the commands run as processes of their own
	testbin.FleetSlotFirst(t) // 20 s or more: among the longest fleets
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := openSuiteFleet(ctx, t, 2)
	for _, v := range []string{"v1", "v2"} {
		if _, err := f.Deploy(ctx, v, nil, nil); err != nil {
			t.Fatalf("deploy %s: %v", v, err)
		}
	}
	env := append(os.Environ(), "MYTHEX_AGENT_TOKEN="+f.AgentToken, "MYTHEX_LB_TOKEN="+f.LBToken)
	cli := func(t *testing.T, args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, env, args...)
	}
	current := func() []string {
		var vs []string
		for i := range f.Loaded.Hosts {
			st, err := f.Agent(i).Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			vs = append(vs, st.Definitions.Current.Version+"/"+st.Definitions.LastGood.Version)
		}
		return vs
	}

	code, out, errOut := cli(t, "rollback", "-f", f.Loaded.Path, "--to", "v0")
	if code != 2 || !strings.Contains(errOut, "v0 is no longer kept by web-1 (keeps v2, v1), web-2 (keeps v2, v1)") {
		t.Fatalf("rollback --to v0 = exit %d\n%s%s; want 2 naming both hosts", code, out, errOut)
	}
	if got := strings.Join(current(), ","); got != "v2/v2,v2/v2" {
		t.Fatalf("after a refused rollback the hosts run %s (current/last good); want v2/v2 untouched", got)
	}

	code, out, errOut = cli(t, "rollback", "-f", f.Loaded.Path, "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res deploy.Result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || code != 0 || !res.OK || res.Version != "v1" {
		t.Fatalf("rollback = exit %d, result %+v (%v)\n%s\n%s", code, res, err, out, errOut)
	}
	if got := strings.Join(current(), ","); got != "v1/v1,v1/v1" {
		t.Fatalf("after the rollback the hosts run %s (current/last good); want v1/v1", got)
	}
	code, out, errOut = cli(t, "history", "-f", f.Loaded.Path, "--json", "--limit", "1")
	var ds []history.Deploy
	if err := json.Unmarshal([]byte(out), &ds); err != nil || code != 0 || len(ds) != 1 {
		t.Fatalf("history = exit %d %v\n%s%s", code, err, out, errOut)
	}
	if d := ds[0]; d.Kind != history.KindRollback || d.To != "v1" || len(d.Hosts) != 2 || !strings.HasPrefix(d.Who, "rollback to v1 by ") {
		t.Errorf("newest history entry %+v; want the rollback to v1 on both hosts", d)
	}
}

// TestDeploy_MeasureReport: deploy --measure --rate --report --json on a
// local fleet of real processes runs the prober through the deploy, streams
// its seconds beside the deploy's events (target changes included), and
// writes the HTML report; the deploy's recording is kept on its hosts, and
// history --report draws the same report from it.
func TestDeploy_MeasureReport(t *testing.T) {
	t.Parallel() // its own processes, ports and directories
	testbin.FleetSlot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := openSuiteFleet(ctx, t, 2)
	if _, err := f.FirstRollout(ctx, "v1"); err != nil {
		t.Fatalf("first rollout: %v", err)
	}
	dir := t.TempDir()
	agentTok, lbTok := filepath.Join(dir, "agent.token"), filepath.Join(dir, "lb.token")
	if err := os.WriteFile(agentTok, []byte(f.AgentToken), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lbTok, []byte(f.LBToken), 0o600); err != nil {
		t.Fatal(err)
	}
	reportPath := filepath.Join(dir, "deploy.html")
	code, out, errOut := runCLI(t, nil, "deploy", "-f", f.Loaded.Path, "--version", "v2", "--json", "--agent-token-file", agentTok, "--lb-token-file", lbTok,
		"--target-service", "gateway", "--report", reportPath, "--measure", f.URL(), "--rate", "100")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res deploy.Result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); code != 0 || err != nil || !res.OK {
		t.Fatalf("deploy: exit %d, result %s (%v)\n%s", code, lines[len(lines)-1], err, errOut)
	}
	kinds := map[string]int{}
	for _, line := range lines {
		var ev struct{ Kind string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line is not JSON: %q", line)
		}
		kinds[ev.Kind]++
	}
	if kinds["probe_second"] < 2 || kinds["target"] < 4 || kinds["end"] == 0 {
		t.Errorf("event stream kinds %v: want probe seconds, target changes and phase ends", kinds)
	}
	if !strings.Contains(errOut, `"kind":"probe"`) {
		t.Errorf("no probe summary on stderr:\n%s", errOut)
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
	if code, hout, herr := runCLI(t, nil, "history", "-f", f.Loaded.Path, "--agent-token-file", agentTok, "--report", fromHistory, "--timeout", "30s"); code != 0 {
		t.Fatalf("history --report: exit %d\n%s\n%s", code, hout, herr)
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

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi/agentapitest"
	"github.com/mythex/mythex/internal/history"
)

// historyTok is the agent token of the history commands' tests;
// historyT0 is when their deploy d1 started.
const historyTok = "0123456789abcdef0123"

var historyT0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// historyAgent serves host's record of deploy d1, v1 → v2 by ci, ok, which
// took took and went through phases; with timeline (when not nil) as its
// timeline.
func historyAgent(t *testing.T, host string, took time.Duration, phases []history.Phase, timeline []byte) string {
	t.Helper()
	return agentapitest.History(t, historyTok, []history.Record{{ID: "d1", Kind: "deploy", Host: host, Who: "deploy v2 by ci",
		Started: historyT0, Ended: historyT0.Add(took), From: "v1", To: "v2", Result: "ok", HostResult: "ok",
		Phases: phases, Timeline: timeline != nil}}, map[string][]byte{"d1": timeline})
}

// historyFleet writes a mythex.yml whose hosts web-1, web-2, … are reached
// at agents, in order, and returns its path.
func historyFleet(t *testing.T, agents ...string) string {
	t.Helper()
	var hosts strings.Builder
	for i, a := range agents {
		fmt.Fprintf(&hosts, "  - {name: web-%d, target: 127.0.0.1:%d, agent: %s}\n", i+1, 9101+i, a)
	}
	conf := "hosts:\n" + hosts.String() + `load_balancer:
  health_check: {interval: 5s, timeout: 2s, healthy_threshold: 2, unhealthy_threshold: 2}
drain: {serve_period: 15s, shutdown_timeout: 10s}
backend: {keepalive_idle_timeout: 75s, stop_grace_period: 30s}
`
	path := filepath.Join(t.TempDir(), "mythex.yml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHistoryCmd(t *testing.T) {
	phases := []history.Phase{{Phase: "drain", Seconds: 1.5}}
	path := historyFleet(t, historyAgent(t, "web-1", 30*time.Second, phases, nil), historyAgent(t, "web-2", 30*time.Second, phases, nil), closedAddr(t))
	t.Setenv(agentTokenEnv, historyTok)
	code, out, errOut := runCLI(t, "history", "-f", path)
	if code != 1 || !strings.Contains(out, "deploy   ok          v1 → v2  deploy v2 by ci") || !strings.Contains(out, "web-2      ok          drain 1.50s") || !strings.Contains(errOut, "web-3") {
		t.Fatalf("history = %d\n%s\n%s\nwant both hosts merged into one deploy, exit 1 naming web-3", code, out, errOut)
	}
	code, out, _ = runCLI(t, "history", "-f", path, "--json")
	var ds []history.Deploy
	if err := json.Unmarshal([]byte(out), &ds); err != nil || len(ds) != 1 || len(ds[0].Hosts) != 2 || code != 1 {
		t.Fatalf("history --json = %d %s (%v)", code, out, err)
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi/agentapitest"
	"github.com/mythex/mythex/internal/history"
)

func TestHistoryCmd(t *testing.T) {
	const tok = "0123456789abcdef0123"
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	agent := func(host string) string {
		return agentapitest.History(t, tok, []history.Record{{ID: "d1", Kind: "deploy", Host: host, Who: "deploy v2 by ci",
			Started: t0, Ended: t0.Add(30 * time.Second), From: "v1", To: "v2", Result: "ok", HostResult: "ok",
			Phases: []history.Phase{{Phase: "drain", Seconds: 1.5}}}}, nil)
	}
	conf := strings.NewReplacer("AGENT1", agent("web-1"), "AGENT2", agent("web-2"), "AGENT3", closedAddr(t)).Replace(`
hosts:
  - {name: web-1, target: 127.0.0.1:9101, agent: AGENT1}
  - {name: web-2, target: 127.0.0.1:9102, agent: AGENT2}
  - {name: web-3, target: 127.0.0.1:9103, agent: AGENT3}
load_balancer:
  health_check: {interval: 5s, timeout: 2s, healthy_threshold: 2, unhealthy_threshold: 2}
drain: {serve_period: 15s, shutdown_timeout: 10s}
backend: {keepalive_idle_timeout: 75s, stop_grace_period: 30s}
`)
	path := filepath.Join(t.TempDir(), "mythex.yml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(agentTokenEnv, tok)
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

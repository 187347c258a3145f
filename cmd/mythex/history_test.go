package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/history"
)

func TestHistoryRecords(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	hosts := []deploy.Host{{Name: "web-1"}, {Name: "web-2"}, {Name: "web-3"}}
	res := deploy.Result{Version: "v2", Hosts: []deploy.HostResult{
		{Host: "web-1", OK: true, PreviousVersion: "v1", Phases: []deploy.PhaseTime{{Phase: deploy.PhaseDrain, Seconds: 1.5}}},
		{Host: "web-2", RolledBack: true, PreviousVersion: "v1"},
	}}
	recs := historyRecords("d1", "ci", t0, t0.Add(time.Minute), hosts, res, errors.New("web-2 failed at healthy"))
	want := []struct{ host, hostResult, from string }{{"web-1", "ok", "v1"}, {"web-2", "rolled_back", "v1"}, {"web-3", "untouched", ""}}
	for i, w := range want {
		r := recs[i]
		if r.Host != w.host || r.HostResult != w.hostResult || r.From != w.from || r.Result != history.ResultRolledBack || r.ID != "d1" || r.To != "v2" {
			t.Errorf("record %d = %+v; want %s %s from %q, deploy rolled_back", i, r, w.host, w.hostResult, w.from)
		}
		if err := history.Validate(r); err != nil {
			t.Errorf("record %d is not storable: %v", i, err)
		}
	}
	if len(recs[0].Phases) != 1 || recs[0].Phases[0].Phase != "drain" {
		t.Errorf("phases lost: %+v", recs[0].Phases)
	}
}

func TestHistoryCmd(t *testing.T) {
	const tok = "0123456789abcdef0123"
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	agent := func(host string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+tok || r.URL.Path != agentapi.PathHistory {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			_ = json.NewEncoder(w).Encode(agentapi.HistoryList{Records: []history.Record{{ID: "d1", Kind: "deploy", Host: host, Who: "deploy v2 by ci",
				Started: t0, Ended: t0.Add(30 * time.Second), From: "v1", To: "v2", Result: "ok", HostResult: "ok",
				Phases: []history.Phase{{Phase: "drain", Seconds: 1.5}}}}})
		}))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
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

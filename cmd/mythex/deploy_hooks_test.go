package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeployCmd_FailingPreDeployHookChangesNothing: pre_deploy fails → exit
// 2 before any agent is asked (the agents here do not even exist).
func TestDeployCmd_FailingPreDeployHookChangesNothing(t *testing.T) {
	dir := t.TempDir()
	conf := strings.NewReplacer("AGENT1", closedAddr(t), "ADMIN", closedAddr(t)).Replace(`
hosts:
  - {name: web-1, target: 127.0.0.1:9101, agent: AGENT1}
load_balancer:
  admin_listen: ADMIN
  health_check: {interval: 5s, timeout: 2s, healthy_threshold: 2, unhealthy_threshold: 2}
drain: {serve_period: 15s, shutdown_timeout: 10s}
backend: {keepalive_idle_timeout: 75s, stop_grace_period: 30s}
deploy:
  compose: compose.yaml
  hooks:
    pre_deploy: ["sh", "-c", "echo release frozen >&2; exit 1"]
`)
	path := filepath.Join(dir, "mythex.yml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "deploy", "-f", path, "--version", "v2")
	if code != 2 || !strings.Contains(errOut, "hook pre_deploy") || !strings.Contains(errOut, "release frozen") || !strings.Contains(errOut, "nothing was changed") {
		t.Fatalf("exit %d, stderr %q; want 2 naming the hook and its output", code, errOut)
	}
}

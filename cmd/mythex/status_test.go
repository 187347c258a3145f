package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

func TestStatusCmd_UnreachableFleetIsDegraded(t *testing.T) {
	dir := t.TempDir()
	tmpl := `
hosts:
  - {name: web-1, target: 127.0.0.1:9101, agent: AGENT1}
  - {name: web-2, target: 127.0.0.1:9102, agent: AGENT2}
load_balancer:
  admin_listen: ADMIN
  health_check: {interval: 5s, timeout: 2s, healthy_threshold: 2, unhealthy_threshold: 2}
drain: {serve_period: 15s, shutdown_timeout: 10s}
backend: {keepalive_idle_timeout: 75s, stop_grace_period: 30s}
`
	conf := strings.NewReplacer("AGENT1", closedAddr(t), "AGENT2", closedAddr(t), "ADMIN", closedAddr(t)).Replace(tmpl)
	path := filepath.Join(dir, "mythex.yml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(agentTokenEnv, "0123456789abcdef0123")
	t.Setenv(lbTokenEnv, "0123456789abcdef0123")
	code, out, errOut := runCLI(t, "status", "-f", path, "--timeout", "3s")
	if code != 1 || !strings.Contains(out, "agent unreachable") || !strings.Contains(out, "✗ degraded: 2 of 2 hosts need attention") {
		t.Fatalf("status of a dead fleet = %d\n%s%s; want exit 1 naming both hosts", code, out, errOut)
	}
	code, out, _ = runCLI(t, "status", "-f", path, "--json", "--timeout", "3s")
	if code != 1 || !strings.Contains(out, `"ok": false`) {
		t.Fatalf("status --json = %d %s", code, out)
	}
	if code, _, errOut := runCLI(t, "status", "-f", filepath.Join(dir, "nope.yml")); code != 2 {
		t.Fatalf("status of a missing file = %d %s; want 2", code, errOut)
	}
	// Nothing is sent to 10.0.0.5: the refusal comes before any dial.
	remote := strings.NewReplacer("AGENT1", "10.0.0.5:9200", "AGENT2", closedAddr(t), "ADMIN", closedAddr(t)).Replace(tmpl)
	if err := os.WriteFile(path, []byte(remote), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, out, _ := runCLI(t, "status", "-f", path, "--timeout", "3s"); !strings.Contains(out, "plain HTTP") {
		t.Errorf("a remote agent without ssh or agent_tls: %s; want the plaintext refusal", out)
	}
}

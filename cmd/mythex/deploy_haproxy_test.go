package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/fleet"
)

// A fleet behind HAProxy whose Runtime API socket is missing: deploy exits 2
// before anything changes and says the fix.
func TestDeploy_HAProxySocketMissing(t *testing.T) {
	dir := t.TempDir()
	cfg := `load_balancer:
  kind: haproxy
  runtime_api: unix:` + filepath.Join(dir, "missing.sock") + `
  backend: app
  health_check: {interval: 1s, timeout: 500ms, healthy_threshold: 2, unhealthy_threshold: 2}
drain: {serve_period: 3s, shutdown_timeout: 1s}
backend: {keepalive_idle_timeout: 75s}
deploy: {compose: compose.yaml, drain_mode: deregister}
hosts:
  - {name: web-1, target: 127.0.0.1:18001, agent: 127.0.0.1:18101}
  - {name: web-2, target: 127.0.0.1:18002, agent: 127.0.0.1:18102}
`
	path := filepath.Join(dir, "mythex.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(agentTokenEnv, "t")
	code, _, stderr := runCLI(t, "deploy", "-f", path, "--version", "v2")
	if code != exitBadUse {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitBadUse, stderr)
	}
	if !strings.Contains(stderr, "stats socket") || !strings.Contains(stderr, "level admin") {
		t.Fatalf("the error does not say the fix: %s", stderr)
	}
}

func TestStatusLB_HAProxy(t *testing.T) {
	cfg := &fleet.Loaded{Config: fleet.Default()}
	cfg.LoadBalancer.Kind = fleet.KindHAProxy
	d, err := statusLB(cfg, statusFlags{})
	if err != nil || d != nil {
		t.Fatalf("without runtime_api: %v %v, want no LB column", d, err)
	}
	cfg.LoadBalancer.RuntimeAPI, cfg.LoadBalancer.Backend = "unix:/run/haproxy/admin.sock", "app"
	d, err = statusLB(cfg, statusFlags{})
	if err != nil || d == nil || d.Kind() != "haproxy" {
		t.Fatalf("%v %v, want the haproxy driver", d, err)
	}
}

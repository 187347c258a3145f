package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
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

func TestDeployHooks_After(t *testing.T) {
	dir := t.TempDir()
	rec := func() []string {
		return []string{"sh", "-c", `echo "$MYTHEX_HOOK $MYTHEX_RESULT $MYTHEX_VERSION $MYTHEX_HOSTS" >> ` + filepath.Join(dir, "log")}
	}
	cfg := &fleet.Loaded{}
	cfg.Hosts = []fleet.Host{{Name: "web-1"}, {Name: "web-2"}}
	cfg.Deploy.Hooks = fleet.Hooks{PostDeploy: rec(), OnFailure: rec(), OnRollback: rec()}
	cases := []struct {
		name string
		res  deploy.Result
		err  error
		want string
	}{
		{"success", deploy.Result{OK: true}, nil, "post_deploy ok v2 web-1,web-2\n"},
		{"failure", deploy.Result{}, errors.New("x"), "on_failure failed v2 web-1,web-2\n"},
		{"rolled back", deploy.Result{Hosts: []deploy.HostResult{{RolledBack: true}}}, errors.New("x"), "on_rollback rolled_back v2 web-1,web-2\non_failure rolled_back v2 web-1,web-2\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(filepath.Join(dir, "log"))
			var warn bytes.Buffer
			newDeployHooks(cfg, "v2", &warn).after(context.Background(), tc.res, tc.err)
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			if string(b) != tc.want || warn.Len() != 0 {
				t.Fatalf("hooks ran %q (warnings %q); want %q", b, warn.String(), tc.want)
			}
		})
	}
	cfg.Deploy.Hooks.PostDeploy = []string{"false"}
	var warn bytes.Buffer
	newDeployHooks(cfg, "v2", &warn).after(context.Background(), deploy.Result{OK: true}, nil)
	if !strings.Contains(warn.String(), "warning: hook post_deploy") {
		t.Errorf("a failing post_deploy was not reported: %q", warn.String())
	}
}

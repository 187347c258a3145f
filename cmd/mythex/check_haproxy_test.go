package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/lbport/haproxy/local"
)

func TestCheck_LiveHAProxy(t *testing.T) {
	dir, err := os.MkdirTemp("", "hx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hx, err := local.Start(context.Background(), local.Options{Dir: dir, Listener: ln.(*net.TCPListener), Backend: "app",
		Servers: []local.Server{{Name: "web-1", Addr: "127.0.0.1:9"}, {Name: "web-2", Addr: "127.0.0.1:9", NoCheck: true}},
		Inter:   time.Second, Fall: 2, Rise: 3, TimeoutCheck: 500 * time.Millisecond, CheckPath: "/healthz"})
	if errors.Is(err, local.ErrNotInstalled) {
		t.Skip("haproxy is not installed (Debian: apt-get install haproxy; .ci/run installs it as root)")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hx.Stop)
	write := func(interval, mode string) string {
		cfg := `load_balancer:
  kind: haproxy
  runtime_api: ` + hx.RuntimeAPI() + `
  backend: app
  config_file: ` + hx.Config + `
  health_check: {interval: ` + interval + `, timeout: 500ms, healthy_threshold: 3, unhealthy_threshold: 2}
drain: {serve_period: 5s, shutdown_timeout: 1s, max: 10s}
backend: {keepalive_idle_timeout: 75s}
deploy: {drain_mode: ` + mode + `}
hosts:
  - {name: web-1, target: 127.0.0.1:18001}
  - {name: web-2, target: 127.0.0.1:18002}
`
		p := filepath.Join(t.TempDir(), "mythex.yml")
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, interval, mode string
		code                 int
		says                 []string
	}{
		{"matching numbers, a server without check warned", "1s", "deregister", 0, []string{"HAProxy 2.", "web-2: no health check", "matches HAProxy's inter"}},
		{"health drain refused without check", "1s", "health", 1, []string{"cannot prove web-2 out of rotation"}},
		{"drift of inter", "2s", "deregister", 1, []string{"interval is 2s in mythex.yml but HAProxy runs inter 1s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "check", "-f", write(tc.interval, tc.mode), "--live")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, stdout, stderr)
			}
			for _, s := range tc.says {
				if !strings.Contains(stdout, s) {
					t.Errorf("output does not say %q:\n%s", s, stdout)
				}
			}
		})
	}
	t.Run("socket missing is bad input", func(t *testing.T) {
		p := write("1s", "deregister")
		b, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(strings.Replace(string(b), hx.Socket, hx.Socket+".gone", 1)), 0o600)
		code, _, stderr := runCLI(t, "check", "-f", p, "--live")
		if code != exitBadUse || !strings.Contains(stderr, "level admin") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
}

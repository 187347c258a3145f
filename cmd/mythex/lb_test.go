package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/freeport"
	"github.com/mythex/mythex/internal/lb"
	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/testkit"
	"github.com/mythex/mythex/internal/wire"
)

// lbConfig writes a mythex.yml with one host at target and returns its path.
func lbConfig(t *testing.T, target, listen, admin, extra string) string {
	t.Helper()
	yml := fmt.Sprintf(`hosts:
  - {name: web-1, target: %s}
load_balancer:
  listen: %s
  admin_listen: %s
  health_check: {path: /healthz, interval: 200ms, timeout: 100ms, healthy_threshold: 2, unhealthy_threshold: 2}
  deregistration_delay: 1s
  idle_timeout: 5s
%s
drain: {serve_period: 15s, shutdown_timeout: 10s}
backend: {keepalive_idle_timeout: 75s}
`, target, listen, admin, extra)
	p := filepath.Join(t.TempDir(), "mythex.yml")
	if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// timeoutAboveInterval writes a config whose health check timeout is not below
// its interval: fleet accepts it, an ALB (and mythex lb) does not.
func timeoutAboveInterval(t *testing.T) string {
	t.Helper()
	p := lbConfig(t, "127.0.0.1:9101", "127.0.0.1:9080", "127.0.0.1:9079", "")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("timeout: 100ms"), []byte("timeout: 300ms"), 1)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ports, err := freeport.Ports(1) // claimed against every other test process's fleets
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
}

func TestLBCmd_BadInputExits2(t *testing.T) {
	good := lbConfig(t, "127.0.0.1:9101", "127.0.0.1:9080", "127.0.0.1:9079", "")
	tests := []struct {
		name    string
		args    []string
		token   string
		wantErr string
	}{
		{"timeout not below interval", []string{"lb", "-f", timeoutAboveInterval(t)}, "tok-0123456789abcdef", "load_balancer.health_check.timeout"},
		{"unknown algorithm", []string{"lb", "-f", good, "--algorithm", "random"}, "tok-0123456789abcdef", "load_balancer.algorithm"},
		{"no token", []string{"lb", "-f", good}, "", "needs a bearer token"},
		{"admin beyond loopback", []string{"lb", "-f", good, "--admin-listen", "0.0.0.0:9079"}, "tok-0123456789abcdef", "--insecure-plaintext"},
		{"bad log format", []string{"lb", "-f", good, "--log-format", "xml"}, "tok-0123456789abcdef", "--log-format"},
		{"not the embedded kind", []string{"lb", "-f", lbConfig(t, "127.0.0.1:9101", "127.0.0.1:9080", "127.0.0.1:9079", "  kind: haproxy\n")}, "tok-0123456789abcdef", "embedded"},
		{"alb stand-in without a key pair", []string{"lb", "-f", lbConfig(t, "127.0.0.1:9101", "127.0.0.1:9080", "127.0.0.1:9079", "  kind: alb\n")}, "tok-0123456789abcdef", lb.ELBv2KeyIDEnv},
		{"negative ELBv2 throttle", []string{"lb", "-f", good, "--elbv2-throttle", "-1"}, "tok-0123456789abcdef", "--elbv2-throttle"},
		{"unreadable ELBv2 key file", []string{"lb", "-f", good, "--elbv2-key-file", "/nonexistent/key"}, "tok-0123456789abcdef", "--elbv2-key-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(lbTokenEnv, tt.token)
			t.Setenv(lb.ELBv2KeyIDEnv, "")
			t.Setenv(lb.ELBv2SecretEnv, "")
			stderr := captureStderr(t, func() {
				if code := run(tt.args); code != exitBadUse {
					t.Errorf("exit code %d, want %d", code, exitBadUse)
				}
			})
			if !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("stderr %q does not name %q", stderr, tt.wantErr)
			}
		})
	}
}

// captureStderr runs f with os.Stderr sent to a pipe and returns what it wrote.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&buf, r); close(done) }()
	f()
	os.Stderr = old
	w.Close()
	<-done
	return buf.String()
}

func TestLBCmd_ServesRegistersAndStops(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "app "+r.URL.Path)
	}))
	t.Cleanup(backend.Close)
	listen, admin := freeAddr(t), freeAddr(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := lbConfig(t, strings.TrimPrefix(backend.URL, "http://"), listen, admin, "")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRootCmd()
	logs := &testkit.SyncBuffer{}
	root.SetErr(logs)
	root.SetArgs([]string{"lb", "-f", cfg, "--token-file", tokenFile, "--algorithm", "least_outstanding_requests"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	c := lbapi.NewClient(admin, "s3cret-0123456789abcdef", nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := c.Target(ctx, "web-1")
		if err == nil && st.State == lbport.StateHealthy && st.InRotation {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("web-1 never became healthy: %+v, %v\nlogs:\n%s", st, err, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get("http://" + listen + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "app /hello" || resp.Header.Get(wire.HeaderLB) != "" {
		t.Fatalf("through the LB: %d %q marker %q", resp.StatusCode, b, resp.Header.Get(wire.HeaderLB))
	}
	if _, err := lbapi.NewClient(admin, "wrong", nil).Targets(ctx); err == nil {
		t.Fatal("admin API answered a wrong token")
	}

	cancel() // what SIGINT/SIGTERM do through run's signal context
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("lb after cancel = %v, want a clean stop", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("lb did not stop")
	}
	out := logs.String()
	for _, want := range []string{"mythex lb started", "algorithm=least_outstanding_requests", "to=healthy", "mythex lb stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
}

func TestLBCmd_SIGTERMStopsTheProcessCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the mythex CLI as a process")
	}
	backend := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(backend.Close)
	listen, admin := freeAddr(t), freeAddr(t)
	cfg := lbConfig(t, strings.TrimPrefix(backend.URL, "http://"), listen, admin, "")
	cmd := mythexCommand(append(os.Environ(), lbTokenEnv+"=s3cret-0123456789abcdef"), "lb", "-f", cfg)
	stderr := &testkit.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	})
	c := lbapi.NewClient(admin, "s3cret-0123456789abcdef", nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := c.Target(context.Background(), "web-1")
		if err == nil && st.State == lbport.StateHealthy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("web-1 never healthy: %v\n%s", err, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("mythex lb exited with %v after SIGTERM, want 0\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("mythex lb still running 15s after SIGTERM\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "mythex lb stopped") {
		t.Fatalf("no stop line in the logs:\n%s", stderr.String())
	}
}

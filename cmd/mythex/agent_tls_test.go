package main

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/transport"
)

// TestAgentCmd_TLS: an agent serving TLS with client certificates answers a
// deployer holding a fleet certificate, and refuses plain HTTP and a client
// without a certificate.
func TestAgentCmd_TLS(t *testing.T) {
	t.Parallel() // its own processes, ports and directories
	if testing.Short() {
		t.Skip("runs the agent as a process")
	}
	dir := t.TempDir()
	now := time.Now()
	if err := transport.InitCA(dir, "fleet", time.Hour, now); err != nil {
		t.Fatal(err)
	}
	if _, err := transport.Issue(dir, dir, "web-1", transport.ServerCert, []string{"127.0.0.1"}, time.Hour, now); err != nil {
		t.Fatal(err)
	}
	if _, err := transport.Issue(dir, dir, "deployer", transport.ClientCert, nil, time.Hour, now); err != nil {
		t.Fatal(err)
	}
	const tok = "0123456789abcdef0123"
	addr := closedAddr(t)
	cmd := mythexCommand(append(os.Environ(), agentTokenEnv+"="+tok), "agent", "--state-dir", filepath.Join(dir, "state"), "--listen", addr, "--no-watchdog",
		"--tls-cert", filepath.Join(dir, "web-1.crt"), "--tls-key", filepath.Join(dir, "web-1.key"), "--client-ca", filepath.Join(dir, "ca.crt"))
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testbin.WaitListening(t, addr, 30*time.Second)

	cfg := &fleet.Loaded{Path: filepath.Join(dir, "mythex.yml")}
	cfg.AgentTLS = &fleet.AgentTLS{CAFile: "ca.crt", CertFile: "deployer.crt", KeyFile: "deployer.key"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := agentconn.NewPool(agentconn.Options{}).Connect(ctx, cfg, fleet.Host{Name: "web-1", Agent: addr}, tok)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(ctx); err != nil {
		t.Fatalf("status over TLS: %v\n%s", err, logs.String())
	}
	if resp, err := http.Get("http://" + addr + "/v1/status"); err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("plain HTTP answered %d", resp.StatusCode)
		}
	}
	noCert := &http.Client{Transport: &http.Transport{TLSClientConfig: mustClientTLS(t, dir, false)}}
	if _, err := noCert.Get("https://" + addr + "/v1/status"); err == nil {
		t.Fatal("a client without a certificate got an answer")
	}
}

func mustClientTLS(t *testing.T, dir string, withCert bool) *tls.Config {
	t.Helper()
	c, err := transport.ClientTLS(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "deployer.crt"), filepath.Join(dir, "deployer.key"), "")
	if err != nil {
		t.Fatal(err)
	}
	if !withCert {
		c.Certificates = nil
	}
	return c
}

// TestAgentCmd_RemoteListenNeedsATransport: beyond loopback, the agent
// refuses plain HTTP unless told --insecure-plaintext, and says what to use.
func TestAgentCmd_RemoteListenNeedsATransport(t *testing.T) {
	t.Setenv(agentTokenEnv, "0123456789abcdef0123")
	code, _, errOut := runCLI(t, "agent", "--state-dir", t.TempDir(), "--listen", "0.0.0.0:9299", "--no-watchdog")
	if code != 2 || !strings.Contains(errOut, "hosts[].ssh") || !strings.Contains(errOut, "--tls-cert") || !strings.Contains(errOut, "--insecure-plaintext") {
		t.Fatalf("exit %d: %q; want 2 naming SSH, TLS and --insecure-plaintext", code, errOut)
	}
	code, _, errOut = runCLI(t, "agent", "--state-dir", t.TempDir(), "--tls-cert", "x.crt")
	if code != 2 || !strings.Contains(errOut, "--tls-key") {
		t.Fatalf("half a TLS setup: exit %d %q; want 2 asking for all three files", code, errOut)
	}
}

// TestAgentCmd_LogFormat: the agent takes --log-format as mythex lb does and
// refuses a bad value before anything starts.
func TestAgentCmd_LogFormat(t *testing.T) {
	code, _, errOut := runCLI(t, "agent", "--state-dir", t.TempDir(), "--log-format", "xml")
	if code != 2 || !strings.Contains(errOut, "--log-format must be text or json") {
		t.Errorf("agent --log-format xml: exit %d %q; want 2", code, errOut)
	}
}

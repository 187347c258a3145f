package agentconn

import (
	"bytes"
	"context"
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
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/testsshd"
	"github.com/mythex/mythex/internal/transport"
)

// fakeAgent answers GET /v1/status for the token tok.
func fakeAgent(tok string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+tok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(agentapi.Status{Host: "web-1"})
	})
}

func loaded(t *testing.T) *fleet.Loaded {
	t.Helper()
	return &fleet.Loaded{Path: filepath.Join(t.TempDir(), "mythex.yml")}
}

func TestPool_Connect(t *testing.T) {
	const tok = "0123456789abcdef0123"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("over SSH the agent stays on loopback", func(t *testing.T) {
		srv := testsshd.Start(t)
		agent := httptest.NewServer(fakeAgent(tok))
		t.Cleanup(agent.Close)
		p := NewPool(Options{SSH: transport.SSHOptions{KnownHosts: []string{srv.KnownHosts}, IdentityFiles: []string{srv.Identity}, NoAgent: true}})
		defer p.Close()
		h := fleet.Host{Name: "web-1", Agent: strings.TrimPrefix(agent.URL, "http://"), SSH: srv.User + "@" + srv.Addr}
		c, err := p.Connect(ctx, loaded(t), h, tok)
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Status(ctx)
		if err != nil || st.Host != "web-1" {
			t.Fatalf("Status over SSH = %+v, %v", st, err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Status(ctx); err == nil {
			t.Fatal("a call after Close still reached the agent")
		}
	})
	t.Run("over TLS with a client certificate", func(t *testing.T) {
		dir := t.TempDir()
		now := time.Now()
		if err := transport.InitCA(dir, "fleet", time.Hour, now); err != nil {
			t.Fatal(err)
		}
		if _, err := transport.Issue(dir, dir, "agent", transport.ServerCert, []string{"127.0.0.1"}, time.Hour, now); err != nil {
			t.Fatal(err)
		}
		if _, err := transport.Issue(dir, dir, "deployer", transport.ClientCert, nil, time.Hour, now); err != nil {
			t.Fatal(err)
		}
		tc, err := transport.ServerTLS(filepath.Join(dir, "agent.crt"), filepath.Join(dir, "agent.key"), filepath.Join(dir, "ca.crt"))
		if err != nil {
			t.Fatal(err)
		}
		agent := httptest.NewUnstartedServer(fakeAgent(tok))
		agent.TLS = tc
		agent.StartTLS()
		t.Cleanup(agent.Close)
		cfg := &fleet.Loaded{Path: filepath.Join(dir, "mythex.yml")}
		cfg.AgentTLS = &fleet.AgentTLS{CAFile: "ca.crt", CertFile: "deployer.crt", KeyFile: "deployer.key"}
		p := NewPool(Options{})
		c, err := p.Connect(ctx, cfg, fleet.Host{Name: "web-1", Agent: strings.TrimPrefix(agent.URL, "https://")}, tok)
		if err != nil {
			t.Fatal(err)
		}
		if st, err := c.Status(ctx); err != nil || st.Host != "web-1" {
			t.Fatalf("Status over TLS = %+v, %v", st, err)
		}
		if err := os.Remove(filepath.Join(dir, "deployer.key")); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Connect(ctx, cfg, fleet.Host{Name: "web-1", Agent: "127.0.0.1:1"}, tok); err == nil || !strings.Contains(err.Error(), "agent_tls") {
			t.Fatalf("Connect without the client key = %v; want an agent_tls error", err)
		}
	})
	t.Run("plain HTTP beyond loopback needs --insecure-plaintext", func(t *testing.T) {
		h := fleet.Host{Name: "web-1", Agent: "10.0.0.5:9200"}
		if _, err := NewPool(Options{}).Connect(ctx, loaded(t), h, tok); !errors.Is(err, ErrPlaintext) {
			t.Fatalf("Connect = %v; want ErrPlaintext", err)
		}
		var warn bytes.Buffer
		// No request is sent: Connect only builds the client.
		if _, err := NewPool(Options{InsecurePlaintext: true, Warn: &warn}).Connect(ctx, loaded(t), h, tok); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(warn.String(), "plain HTTP") {
			t.Errorf("no warning: %q", warn.String())
		}
	})
}

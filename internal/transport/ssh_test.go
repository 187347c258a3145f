package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/testsshd"
)

// TestSSHTunnel runs against a real OpenSSH server: the tunnel reaches a
// loopback HTTP server as the host sees it, and every refusal says why.
func TestSSHTunnel(t *testing.T) {
	srv := testsshd.Start(t)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "agent here") }))
	t.Cleanup(app.Close)
	target, err := ParseSSHTarget(srv.User + "@" + srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	good := SSHOptions{KnownHosts: []string{srv.KnownHosts}, IdentityFiles: []string{srv.Identity}, NoAgent: true}

	t.Run("reaches a loopback listener through the host", func(t *testing.T) {
		tun, err := DialSSH(ctx, target, good)
		if err != nil {
			t.Fatal(err)
		}
		defer tun.Close()
		hc := &http.Client{Transport: &http.Transport{DialContext: tun.DialContext}}
		resp, err := hc.Get(app.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "agent here" {
			t.Fatalf("body %q", b)
		}
	})
	cases := []struct {
		name string
		opts SSHOptions
		want error
		text string
	}{
		{"unknown host key", SSHOptions{KnownHosts: []string{emptyFile(t)}, IdentityFiles: []string{srv.Identity}, NoAgent: true}, ErrUnknownHostKey, "SHA256:"},
		{"changed host key", SSHOptions{KnownHosts: []string{srv.OtherKnownHosts(t)}, IdentityFiles: []string{srv.Identity}, NoAgent: true}, ErrChangedHostKey, "SHA256:"},
		{"no keys", SSHOptions{KnownHosts: []string{srv.KnownHosts}, IdentityFiles: []string{}, NoAgent: true}, ErrNoSSHKeys, "ssh-agent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tun, err := DialSSH(ctx, target, tc.opts)
			if err == nil {
				tun.Close()
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("DialSSH = %v; want %v mentioning %q", err, tc.want, tc.text)
			}
		})
	}
	t.Run("a key the server does not know is refused", func(t *testing.T) {
		other := testsshd.Start(t) // its identity is not authorised on srv
		_, err := DialSSH(ctx, target, SSHOptions{KnownHosts: []string{srv.KnownHosts}, IdentityFiles: []string{other.Identity}, NoAgent: true})
		if err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
			t.Fatalf("DialSSH with a foreign key = %v; want the server's refusal", err)
		}
	})
}

func TestParseSSHTarget(t *testing.T) {
	cases := []struct {
		in, user, addr string
		bad            bool
	}{
		{"deploy@10.0.0.5", "deploy", "10.0.0.5:22", false},
		{"deploy@web-1:2222", "deploy", "web-1:2222", false},
		{"deploy@[::1]:2200", "deploy", "[::1]:2200", false},
		{"@web-1", "", "", true},
		{"deploy@", "", "", true},
		{"deploy@web 1", "", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSSHTarget(tc.in)
			if (err != nil) != tc.bad {
				t.Fatalf("ParseSSHTarget(%q) error %v, want bad=%v", tc.in, err, tc.bad)
			}
			if !tc.bad && (got.User != tc.user || got.Addr != tc.addr) {
				t.Fatalf("ParseSSHTarget(%q) = %+v, want %s@%s", tc.in, got, tc.user, tc.addr)
			}
		})
	}
}

func emptyFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

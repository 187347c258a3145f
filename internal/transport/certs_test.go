package transport

import (
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fleetPKI makes a CA, an agent certificate for 127.0.0.1 and a deployer
// client certificate, as `mythex certs init` and `issue` do.
func fleetPKI(t *testing.T, now time.Time, validity time.Duration) (dir string) {
	t.Helper()
	dir = t.TempDir()
	if err := InitCA(dir, "test fleet", 24*time.Hour, now); err != nil {
		t.Fatal(err)
	}
	if _, err := Issue(dir, dir, "agent", ServerCert, []string{"127.0.0.1", "localhost"}, validity, now); err != nil {
		t.Fatal(err)
	}
	if _, err := Issue(dir, dir, "deployer", ClientCert, nil, validity, now); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tlsAgent serves "ok" over TLS that requires a client certificate from the
// fleet CA in dir.
func tlsAgent(t *testing.T, dir string) string {
	t.Helper()
	cfg, err := ServerTLS(filepath.Join(dir, "agent.crt"), filepath.Join(dir, "agent.key"), filepath.Join(dir, CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

func get(t *testing.T, url string, cfg *tls.Config) error {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "ok" {
		return errors.New("unexpected body " + string(b))
	}
	return nil
}

func TestTLS_MutualAuth(t *testing.T) {
	now := time.Now()
	dir := fleetPKI(t, now, time.Hour)
	url := tlsAgent(t, dir)
	good, err := ClientTLS(filepath.Join(dir, CACertFile), filepath.Join(dir, "deployer.crt"), filepath.Join(dir, "deployer.key"), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := get(t, url, good); err != nil {
		t.Fatalf("deployer with a fleet client certificate: %v", err)
	}

	other := fleetPKI(t, now, time.Hour) // another CA entirely
	expired := t.TempDir()
	if err := InitCA(expired, "old", 24*time.Hour, now); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  func() *tls.Config
	}{
		{"no client certificate", func() *tls.Config {
			c := good.Clone()
			c.Certificates = nil
			return c
		}},
		{"client certificate from another CA", func() *tls.Config {
			c, err := ClientTLS(filepath.Join(dir, CACertFile), filepath.Join(other, "deployer.crt"), filepath.Join(other, "deployer.key"), "")
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
		{"agent certificate from another CA", func() *tls.Config {
			c, err := ClientTLS(filepath.Join(other, CACertFile), filepath.Join(dir, "deployer.crt"), filepath.Join(dir, "deployer.key"), "")
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
		{"TLS 1.2 only", func() *tls.Config {
			c := good.Clone()
			c.MinVersion, c.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
			return c
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := get(t, url, tc.cfg()); err == nil {
				t.Fatal("the agent answered; want the handshake refused")
			}
		})
	}
	t.Run("expired client certificate", func(t *testing.T) {
		old := t.TempDir()
		if err := InitCA(old, "fleet", 48*time.Hour, now.Add(-47*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := Issue(old, old, "agent", ServerCert, []string{"127.0.0.1"}, time.Hour, now); err != nil {
			t.Fatal(err)
		}
		if _, err := Issue(old, old, "deployer", ClientCert, nil, time.Hour, now.Add(-2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		url := tlsAgent(t, old)
		c, err := ClientTLS(filepath.Join(old, CACertFile), filepath.Join(old, "deployer.crt"), filepath.Join(old, "deployer.key"), "")
		if err != nil {
			t.Fatal(err)
		}
		if err := get(t, url, c); err == nil {
			t.Fatal("an expired client certificate was accepted")
		}
	})
}

func TestCerts_Refusals(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	if _, err := Issue(dir, dir, "x", ClientCert, nil, time.Hour, now); err == nil || !strings.Contains(err.Error(), "certs init") {
		t.Errorf("Issue without a CA = %v; want it to say to run certs init", err)
	}
	if err := InitCA(dir, "fleet", time.Hour, now); err != nil {
		t.Fatal(err)
	}
	if err := InitCA(dir, "fleet", time.Hour, now); !errors.Is(err, ErrExists) {
		t.Errorf("InitCA twice = %v; want ErrExists (a key is never overwritten)", err)
	}
	if _, err := Issue(dir, dir, "web-1", ServerCert, nil, time.Hour, now); err == nil {
		t.Error("a server certificate without hosts was issued")
	}
	if _, err := Issue(dir, dir, "../escape", ClientCert, nil, time.Hour, now); err == nil {
		t.Error("a certificate name with a path was accepted")
	}
	if _, err := Issue(dir, dir, "web-1", ServerCert, []string{"10.0.0.5"}, time.Hour, now); err != nil {
		t.Fatal(err)
	}
	if _, err := Issue(dir, dir, "web-1", ServerCert, []string{"10.0.0.5"}, time.Hour, now); !errors.Is(err, ErrExists) {
		t.Errorf("Issue twice = %v; want ErrExists", err)
	}
	if _, err := ServerTLS("", "", ""); err == nil {
		t.Error("ServerTLS without files was accepted")
	}
}

package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/testsshd"
)

// TestSSHTunnel_ReconnectsAfterADrop: the network drops the SSH connection
// (a proxy in front of a real sshd cuts it); the tunnel's next dial makes a
// new connection, host key checked again, and calls reach the agent again.
// After Close, nothing is dialled again.
func TestSSHTunnel_ReconnectsAfterADrop(t *testing.T) {
	srv := testsshd.Start(t)
	proxy := testsshd.NewProxy(t, srv.Addr)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "agent here") }))
	t.Cleanup(app.Close)
	target, err := ParseSSHTarget(srv.User + "@" + proxy.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tun, err := DialSSH(ctx, target, SSHOptions{KnownHosts: []string{srv.KnownHostsAt(t, proxy.Addr)}, IdentityFiles: []string{srv.Identity}, NoAgent: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	hc := &http.Client{Transport: &http.Transport{DialContext: tun.DialContext, DisableKeepAlives: true}}
	get := func() error {
		resp, err := hc.Get(app.URL)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "agent here" {
			return errors.New("body " + string(b))
		}
		return nil
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	if n := proxy.Cut(); n != 1 {
		t.Fatalf("cut %d connections, want the tunnel's one", n)
	}
	if err := get(); err != nil {
		t.Fatalf("the first call after the drop: %v; want it carried over on a new connection", err)
	}
	if a := proxy.Accepted(); a != 2 {
		t.Errorf("%d SSH connections made, want 2 (one before the drop, one after)", a)
	}
	tun.Close()
	if _, err := tun.DialContext(ctx, "tcp", app.Listener.Addr().String()); !errors.Is(err, ErrTunnelClosed) {
		t.Errorf("dial after Close = %v, want ErrTunnelClosed", err)
	}
	if a := proxy.Accepted(); a != 2 {
		t.Errorf("a closed tunnel connected again (%d connections)", a)
	}
}

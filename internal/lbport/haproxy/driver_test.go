package haproxy_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/haproxy"
	"github.com/mythex/mythex/internal/lbport/haproxy/local"
)

// backendServer is a real HTTP server behind HAProxy: /healthz answers 200
// unless down; / names the server; /slow blocks until release is closed.
type backendServer struct {
	*httptest.Server
	name    string
	down    atomic.Bool
	release chan struct{}
	started chan struct{}
}

func newBackend(t *testing.T, name string) *backendServer {
	t.Helper()
	b := &backendServer{name: name, release: make(chan struct{}), started: make(chan struct{}, 16)}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			if b.down.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		case "/slow":
			b.started <- struct{}{}
			select {
			case <-b.release:
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, name)
	}))
	t.Cleanup(func() {
		select {
		case <-b.release:
		default:
			close(b.release)
		}
		b.Close()
	})
	return b
}

type rig struct {
	hx     *local.HAProxy
	driver *haproxy.Driver
	front  string
}

func startHAProxy(t *testing.T, o local.Options) *rig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if o.Dir == "" {
		o.Dir = shortTempDir(t)
	}
	o.Listener = ln.(*net.TCPListener)
	if o.Backend == "" {
		o.Backend = "app"
	}
	if o.Inter == 0 {
		o.Inter, o.Fall, o.Rise, o.TimeoutCheck = 100*time.Millisecond, 2, 2, 500*time.Millisecond
	}
	hx, err := local.Start(context.Background(), o)
	if errors.Is(err, local.ErrNotInstalled) {
		t.Skip("haproxy is not installed (Debian: apt-get install haproxy; .ci/run installs it as root): " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hx.Stop)
	d, err := haproxy.New(haproxy.Config{Client: haproxy.NewClient(haproxy.Address{Network: "unix", Addr: hx.Socket}),
		Backend: o.Backend, ConfigFile: hx.Config})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{hx: hx, driver: d, front: "http://" + hx.Addr}
}

// shortTempDir is a temporary directory with a path short enough for a unix
// socket (108 bytes), which t.TempDir's long names can exceed.
func shortTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "hx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func ref(id string) lbport.TargetRef { return lbport.TargetRef{ID: id} }

// waitState polls Describe until cond holds for target id (or 15s pass).
func waitState(t *testing.T, d *haproxy.Driver, id string, what string, cond func(lbport.Target) bool) lbport.Target {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last lbport.Target
	for {
		tg, err := lbport.Describe1(context.Background(), d, ref(id))
		if err == nil {
			last = tg
			if cond(tg) {
				return tg
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never %s; last %+v, err %v", id, what, last, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func get(t *testing.T, url string) (string, error) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return string(b), errors.New(resp.Status)
	}
	return string(b), err
}

func TestDriver_DrainAndReady(t *testing.T) {
	a, b := newBackend(t, "web-1"), newBackend(t, "web-2")
	r := startHAProxy(t, local.Options{Servers: []local.Server{{Name: "web-1", Addr: a.Listener.Addr().String()}, {Name: "web-2", Addr: b.Listener.Addr().String()}}})
	ctx := context.Background()
	rep, err := r.driver.Preflight(ctx, []string{"web-1", "web-2"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Version, "2.") && !strings.HasPrefix(rep.Version, "3.") {
		t.Fatalf("version %q", rep.Version)
	}
	if len(rep.NoCheck) != 0 {
		t.Fatalf("no-check servers %v; every server has check", rep.NoCheck)
	}
	healthy := func(tg lbport.Target) bool { return tg.State == lbport.StateHealthy && tg.InRotation }
	waitState(t, r.driver, "web-1", "healthy", healthy)
	waitState(t, r.driver, "web-2", "healthy", healthy)

	if err := r.driver.Deregister(ctx, ref("web-1")); err != nil {
		t.Fatal(err)
	}
	tg, err := lbport.Describe1(ctx, r.driver, ref("web-1"))
	if err != nil {
		t.Fatal(err)
	}
	if tg.State != lbport.StateDraining || tg.Reason != lbport.ReasonDeregistrationInProgress || tg.InRotation || tg.InFlight != 0 {
		t.Fatalf("after drain: %+v", tg)
	}
	for range 10 {
		who, err := get(t, r.front+"/")
		if err != nil || who != "web-2" {
			t.Fatalf("a request after drain reached %q (%v); only web-2 is in rotation", who, err)
		}
	}
	// The service behind the drained server goes away: HAProxy's checks go
	// on and see it, and the server stays drained.
	a.down.Store(true)
	waitState(t, r.driver, "web-1", "drained and failing", func(tg lbport.Target) bool { return tg.State == lbport.StateDraining })
	a.down.Store(false)
	if err := r.driver.Register(ctx, ref("web-1")); err != nil {
		t.Fatal(err)
	}
	waitState(t, r.driver, "web-1", "healthy again", healthy)

	// Describe answers in the order asked, unknown servers as unused.
	ts, err := r.driver.Describe(ctx, ref("web-2"), ref("nope"), ref("web-1"))
	if err != nil {
		t.Fatal(err)
	}
	if ts[0].ID != "web-2" || ts[1].State != lbport.StateUnused || ts[1].Reason != lbport.ReasonNotRegistered || ts[2].ID != "web-1" {
		t.Fatalf("describe: %+v", ts)
	}
	// Maintenance with nothing in flight is unused.
	if err := r.driver.Maintenance(ctx, ref("web-2")); err != nil {
		t.Fatal(err)
	}
	tg, _ = lbport.Describe1(ctx, r.driver, ref("web-2"))
	if tg.State != lbport.StateUnused || tg.InRotation {
		t.Fatalf("after maint: %+v", tg)
	}
}

func TestDriver_HealthFlipTakesServerOut(t *testing.T) {
	a, b := newBackend(t, "web-1"), newBackend(t, "web-2")
	r := startHAProxy(t, local.Options{Servers: []local.Server{{Name: "web-1", Addr: a.Listener.Addr().String()}, {Name: "web-2", Addr: b.Listener.Addr().String()}}})
	waitState(t, r.driver, "web-1", "healthy", func(tg lbport.Target) bool { return tg.State == lbport.StateHealthy })
	a.down.Store(true)
	tg := waitState(t, r.driver, "web-1", "unhealthy", func(tg lbport.Target) bool { return tg.State == lbport.StateUnhealthy })
	if tg.Reason != lbport.ReasonResponseCodeMismatch || tg.InRotation {
		t.Fatalf("a 503 check: %+v, want unhealthy Target.ResponseCodeMismatch out of rotation", tg)
	}
	a.down.Store(false)
	waitState(t, r.driver, "web-1", "back", func(tg lbport.Target) bool { return tg.State == lbport.StateHealthy && tg.InRotation })
}

func TestDriver_InFlightAndCutSessions(t *testing.T) {
	a, b := newBackend(t, "web-1"), newBackend(t, "web-2")
	r := startHAProxy(t, local.Options{Servers: []local.Server{{Name: "web-1", Addr: a.Listener.Addr().String()}, {Name: "web-2", Addr: b.Listener.Addr().String()}}})
	ctx := context.Background()
	healthy := func(tg lbport.Target) bool { return tg.State == lbport.StateHealthy }
	waitState(t, r.driver, "web-1", "healthy", healthy)
	waitState(t, r.driver, "web-2", "healthy", healthy)
	// Only web-1 in rotation, so the slow request lands there.
	if err := r.driver.Deregister(ctx, ref("web-2")); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := get(t, r.front+"/slow")
		errc <- err
	}()
	select {
	case <-a.started:
	case <-time.After(15 * time.Second):
		t.Fatal("the slow request never reached web-1")
	}
	if err := r.driver.Deregister(ctx, ref("web-1")); err != nil {
		t.Fatal(err)
	}
	tg := waitState(t, r.driver, "web-1", "draining with the request in flight", func(tg lbport.Target) bool {
		return tg.State == lbport.StateDraining && tg.InFlight >= 1
	})
	if tg.InRotation {
		t.Fatalf("%+v", tg)
	}
	if err := r.driver.CutSessions(ctx, ref("web-1")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the cut request succeeded")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("shutdown sessions did not end the request")
	}
	waitState(t, r.driver, "web-1", "idle", func(tg lbport.Target) bool { return tg.InFlight == 0 })
	if err := r.driver.CutSessions(ctx, ref("nope")); !errors.Is(err, lbport.ErrInvalidTarget) {
		t.Fatalf("cut an unknown server: %v, want ErrInvalidTarget", err)
	}
}

func TestDriver_Settings(t *testing.T) {
	a := newBackend(t, "web-1")
	r := startHAProxy(t, local.Options{Servers: []local.Server{{Name: "web-1", Addr: a.Listener.Addr().String()}},
		Inter: 150 * time.Millisecond, Fall: 3, Rise: 4, TimeoutCheck: 120 * time.Millisecond, CheckPath: "/healthz"})
	s, err := r.driver.Settings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := lbport.HealthCheck{Path: "/healthz", Interval: 150 * time.Millisecond, Timeout: 120 * time.Millisecond, HealthyThreshold: 4, UnhealthyThreshold: 3}
	if s.HealthCheck != want {
		t.Fatalf("settings %+v, want %+v", s.HealthCheck, want)
	}
	if err := r.driver.Apply(context.Background(), s); !errors.Is(err, lbport.ErrUnsupported) {
		t.Fatalf("apply: %v", err)
	}
}

func TestDriver_PreflightErrors(t *testing.T) {
	a := newBackend(t, "web-1")
	servers := []local.Server{{Name: "web-1", Addr: a.Listener.Addr().String()}, {Name: "web-2", Addr: a.Listener.Addr().String(), NoCheck: true}}
	r := startHAProxy(t, local.Options{Servers: servers})
	ctx := context.Background()
	client := haproxy.NewClient(haproxy.Address{Network: "unix", Addr: r.hx.Socket})

	t.Run("no check", func(t *testing.T) {
		rep, err := r.driver.Preflight(ctx, []string{"web-1", "web-2"})
		if err != nil || len(rep.NoCheck) != 1 || rep.NoCheck[0] != "web-2" {
			t.Fatalf("%+v %v", rep, err)
		}
		tg, _ := lbport.Describe1(ctx, r.driver, ref("web-2"))
		if tg.State != lbport.StateUnavailable || tg.Reason != lbport.ReasonHealthCheckDisabled || !tg.InRotation {
			t.Fatalf("a server without check: %+v", tg)
		}
	})
	t.Run("unknown server", func(t *testing.T) {
		_, err := r.driver.Preflight(ctx, []string{"web-1", "web-9"})
		if !errors.Is(err, lbport.ErrInvalidTarget) || !strings.Contains(err.Error(), "web-9") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("unknown backend", func(t *testing.T) {
		d, _ := haproxy.New(haproxy.Config{Client: client, Backend: "nope"})
		_, err := d.Preflight(ctx, []string{"web-1"})
		if !errors.Is(err, lbport.ErrTargetGroupNotFound) || !strings.Contains(err.Error(), "load_balancer.backend") {
			t.Fatalf("%v", err)
		}
		if err := d.Register(ctx, ref("web-1")); !errors.Is(err, lbport.ErrTargetGroupNotFound) {
			t.Fatalf("register on an unknown backend: %v", err)
		}
	})
	t.Run("socket missing", func(t *testing.T) {
		d, _ := haproxy.New(haproxy.Config{Client: haproxy.NewClient(haproxy.Address{Network: "unix", Addr: filepath.Join(r.hx.Socket + ".gone")}), Backend: "app"})
		_, err := d.Preflight(ctx, []string{"web-1"})
		var se *haproxy.SocketError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "level admin") || lbport.IsTransient(err) {
			t.Fatalf("%v (transient %v)", err, lbport.IsTransient(err))
		}
	})
	t.Run("tcp refused", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := ln.Addr().String()
		ln.Close()
		d, _ := haproxy.New(haproxy.Config{Client: haproxy.NewClient(haproxy.Address{Network: "tcp", Addr: addr}), Backend: "app"})
		_, err := d.Preflight(ctx, []string{"web-1"})
		var se *haproxy.SocketError
		if !errors.As(err, &se) || !lbport.IsTransient(err) {
			t.Fatalf("%v", err)
		}
	})
}

func TestDriver_SocketNotAdmin(t *testing.T) {
	a := newBackend(t, "web-1")
	r := startHAProxy(t, local.Options{Servers: []local.Server{{Name: "web-1", Addr: a.Listener.Addr().String()}}, SocketLevel: "operator"})
	_, err := r.driver.Preflight(context.Background(), []string{"web-1"})
	if !errors.Is(err, lbport.ErrUnauthorized) || !strings.Contains(err.Error(), "level admin") {
		t.Fatalf("%v", err)
	}
	if err := r.driver.Deregister(context.Background(), ref("web-1")); !errors.Is(err, lbport.ErrUnauthorized) {
		t.Fatalf("drain at level operator: %v", err)
	}
}

func TestClient_HungSocketTimesOut(t *testing.T) {
	dir := shortTempDir(t)
	sock := filepath.Join(dir, "hung.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // never answers
		}
	}()
	c := haproxy.NewClient(haproxy.Address{Network: "unix", Addr: sock})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err = c.Do(ctx, "show info")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a silent socket: %v, want the context's deadline", err)
	}
	if el := time.Since(begin); el > 10*time.Second {
		t.Fatalf("took %v", el)
	}
}

func TestClient_RefusesSmuggledCommands(t *testing.T) {
	c := haproxy.NewClient(haproxy.Address{Network: "unix", Addr: "/nonexistent"})
	for _, cmd := range []string{"show info; shutdown sessions server a/b", "show info\nset server a/b state maint", ""} {
		if _, err := c.Do(context.Background(), cmd); err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Fatalf("%q: %v", cmd, err)
		}
	}
	for _, name := range []string{"a;b", "a b", "a\nb", "", "a/b"} {
		if _, err := haproxy.New(haproxy.Config{Client: c, Backend: name}); err == nil {
			t.Fatalf("backend %q accepted", name)
		}
		if _, err := haproxy.New(haproxy.Config{Client: c, Backend: "app", Servers: map[string]string{"web-1": name}}); err == nil {
			t.Fatalf("server %q accepted", name)
		}
	}
}

// A reload of HAProxy without a server-state-file forgets the drain: the
// next Describe notices it, sets the drain again and says so; a server the
// driver set ready again is left alone.
func TestDriver_ReloadLosesTheDrainAndDescribeSetsItAgain(t *testing.T) {
	a, b := newBackend(t, "web-1"), newBackend(t, "web-2")
	r := startHAProxy(t, local.Options{Servers: []local.Server{{Name: "web-1", Addr: a.Listener.Addr().String()}, {Name: "web-2", Addr: b.Listener.Addr().String()}}})
	ctx := context.Background()
	healthy := func(tg lbport.Target) bool { return tg.State == lbport.StateHealthy && tg.InRotation }
	waitState(t, r.driver, "web-1", "healthy", healthy)
	if err := r.driver.Deregister(ctx, ref("web-1")); err != nil {
		t.Fatal(err)
	}
	if err := r.hx.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	// HAProxy itself forgot it (this is what the driver has to cope with).
	c := haproxy.NewClient(haproxy.Address{Network: "unix", Addr: r.hx.Socket})
	ans, err := c.Do(ctx, "show servers state app")
	if err != nil {
		t.Fatal(err)
	}
	states, err := haproxy.ParseServersState(ans)
	if err != nil {
		t.Fatal(err)
	}
	if states["web-1"].Admin.Drain() {
		t.Fatal("HAProxy kept the drain across the reload: the test proves nothing")
	}
	tg, err := lbport.Describe1(ctx, r.driver, ref("web-1"))
	if err != nil {
		t.Fatal(err)
	}
	if tg.State != lbport.StateDraining || tg.InRotation || !strings.Contains(tg.Description, "lost the drain") || r.driver.Reapplied() != 1 {
		t.Fatalf("after the reload: %+v (re-applied %d); want draining again, said so", tg, r.driver.Reapplied())
	}
	for range 10 {
		if who, err := get(t, r.front+"/"); err != nil || who != "web-2" {
			t.Fatalf("a request after the drain was set again reached %q (%v)", who, err)
		}
	}

	// Set ready again, the server reads out of drain as after a reload: the
	// driver no longer counts it drained and leaves it in rotation.
	if err := r.driver.Register(ctx, ref("web-1")); err != nil {
		t.Fatal(err)
	}
	waitState(t, r.driver, "web-1", "healthy again", healthy)
	if n := r.driver.Reapplied(); n != 1 {
		t.Fatalf("re-applied %d times, want 1: a server set ready again was drained", n)
	}
}

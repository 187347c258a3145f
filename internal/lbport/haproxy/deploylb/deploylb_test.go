package deploylb_test

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
	"sync"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/haproxy/deploylb"
	"github.com/mythex/mythex/internal/lbport/haproxy/local"
	"github.com/mythex/mythex/internal/wire"
)

// simHost is a host whose one service (gateway) is an in-process HTTP
// server behind the real HAProxy, driven by a minimal in-memory agent:
// stopping it makes its health check fail and its answers 503; /slow
// requests last until the client or HAProxy gives up.
type simHost struct {
	name string
	srv  *httptest.Server

	mu      sync.Mutex
	version string
	pending string
	running bool
	drained bool          // health flipped: /healthz 503, real requests still served
	slow    chan struct{} // one value per /slow request that started
}

func newSimHost(t *testing.T, name, version string) *simHost {
	t.Helper()
	h := &simHost{name: name, version: version, running: true, slow: make(chan struct{}, 64)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		running, v, drained := h.running, h.version, h.drained
		h.mu.Unlock()
		if !running || (drained && r.URL.Path == "/healthz") {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set(wire.HeaderHost, name)
		w.Header().Set(wire.HeaderVersion, v)
		if r.URL.Path == "/slow" {
			h.slow <- struct{}{}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Minute):
			}
		}
		io.WriteString(w, v)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *simHost) Status(context.Context) (agentapi.Status, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return agentapi.Status{Host: h.name, Definitions: agentapi.Definitions{Current: &agentapi.DefinitionRef{Version: h.version, Hash: "h-" + h.version}},
		Services: []agentapi.ServiceStatus{{Name: "gateway", Version: h.version, Running: h.running}}}, nil
}
func (h *simHost) AcquireLease(_ context.Context, _ bool, holder string, _ time.Duration) (agentapi.Lease, error) {
	return agentapi.Lease{ID: "lease-" + holder, Holder: holder}, nil
}
func (h *simHost) RenewLease(_ context.Context, _ bool, id string, _ time.Duration) (agentapi.Lease, error) {
	return agentapi.Lease{ID: id}, nil
}
func (h *simHost) ReleaseLease(context.Context, bool, string) error { return nil }
func (h *simHost) Publish(_ context.Context, _ string, def []byte) (agentapi.PublishReport, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending = string(def)
	return agentapi.PublishReport{Current: agentapi.DefinitionRef{Version: h.pending, Hash: "h-" + h.pending}, Changed: true}, nil
}
func (h *simHost) Drain(context.Context, string, []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drained = true
	return nil
}
func (h *simHost) Stop(context.Context, string) (agentapi.StopReport, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running = false
	return agentapi.StopReport{Services: []agentapi.StopResult{{Name: "gateway"}}}, nil
}
func (h *simHost) Start(context.Context, string) (agentapi.StartReport, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.version, h.running, h.drained = h.pending, true, false
	return agentapi.StartReport{Services: []agentapi.StartResult{{Name: "gateway"}}}, nil
}
func (h *simHost) Verify(_ context.Context, _ []string, version string) (agentapi.VerifyReport, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ok := h.running && h.version == version
	return agentapi.VerifyReport{OK: ok, Services: []agentapi.ServiceCheck{{Name: "gateway", OK: ok}}}, nil
}
func (h *simHost) Rollback(context.Context, string) (agentapi.StartReport, error) {
	return agentapi.StartReport{}, nil
}
func (h *simHost) MarkGood(context.Context, string) error { return nil }

var _ deploy.Agent = (*simHost)(nil)

func shortTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "hx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// rig is a real HAProxy in front of simulated hosts, and the fleet config
// that points at it.
type rig struct {
	hx    *local.HAProxy
	hosts []*simHost
	cfg   *fleet.Loaded
}

func startRig(t *testing.T, n int, noCheck bool) *rig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := &rig{}
	var servers []local.Server
	c := fleet.Default()
	for i := range n {
		h := newSimHost(t, "web-"+string(rune('1'+i)), "v1")
		r.hosts = append(r.hosts, h)
		servers = append(servers, local.Server{Name: h.name, Addr: h.srv.Listener.Addr().String(), NoCheck: noCheck})
		c.Hosts = append(c.Hosts, fleet.Host{Name: h.name, Target: h.srv.Listener.Addr().String(), Agent: "127.0.0.1:1"})
	}
	hc := &c.LoadBalancer.HealthCheck
	hc.Interval, hc.Timeout, hc.HealthyThreshold, hc.UnhealthyThreshold = 100*time.Millisecond, 500*time.Millisecond, 2, 2
	r.hx, err = local.Start(context.Background(), local.Options{Dir: shortTempDir(t), Listener: ln.(*net.TCPListener), Backend: "app", Servers: servers,
		Inter: hc.Interval, Fall: hc.UnhealthyThreshold, Rise: hc.HealthyThreshold, TimeoutCheck: hc.Timeout})
	if errors.Is(err, local.ErrNotInstalled) {
		t.Skip("haproxy is not installed (Debian: apt-get install haproxy; .ci/run installs it as root)")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.hx.Stop)
	c.LoadBalancer.Kind = fleet.KindHAProxy
	c.LoadBalancer.RuntimeAPI = r.hx.RuntimeAPI()
	c.LoadBalancer.Backend = "app"
	c.LoadBalancer.Listen = r.hx.Addr
	c.LoadBalancer.DeregistrationDelay = 300 * time.Millisecond
	c.Drain.ServePeriod, c.Drain.ShutdownTimeout, c.Drain.Max = 0, time.Second, 20*time.Second
	c.Deploy.DrainMode = fleet.DrainModeDeregister
	c.Deploy.LeaseTTL = 10 * time.Second
	// Look twice for 1s (10 of HAProxy's checks), not the default 10s:
	// each host deploy would otherwise cost 10s of test time.
	c.Deploy.MinHealthyTime = time.Second
	r.cfg = &fleet.Loaded{Path: filepath.Join(t.TempDir(), "mythex.yml"), Config: c}
	return r
}

// options builds the deploy of version with the bridge's LB over the real
// HAProxy and the simulated hosts as agents.
func (r *rig) options(t *testing.T, version string, obs deploy.Observer) deploy.Options {
	t.Helper()
	d, err := deploylb.NewDriver(r.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deploylb.Preflight(context.Background(), r.cfg, d); err != nil {
		t.Fatal(err)
	}
	targets := map[string]string{}
	var hosts []deploy.Host
	for i, h := range r.hosts {
		targets[h.name] = r.cfg.Hosts[i].Target
		hosts = append(hosts, deploy.Host{Name: h.name, Target: r.cfg.Hosts[i].Target, Agent: h, Definition: []byte(version)})
	}
	return deploy.Options{Config: &r.cfg.Config, Version: version, Hosts: hosts, LB: deploylb.LB{Driver: d, Targets: targets},
		Front: &deploy.HTTPFront{URL: "http://" + r.hx.Addr + "/"}, TargetServices: []string{"gateway"}, Observer: obs}
}

func TestDeploy_LongRequestsHitTheBound(t *testing.T) {
	t.Parallel() // its own HAProxy, hosts and ports
	r := startRig(t, 2, false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Wait until HAProxy calls both servers UP.
	d, _ := deploylb.NewDriver(r.cfg)
	deadline := time.Now().Add(15 * time.Second)
	for {
		ts, err := d.Describe(ctx, lbport.TargetRef{ID: "web-1"}, lbport.TargetRef{ID: "web-2"})
		if err == nil && ts[0].State == lbport.StateHealthy && ts[1].State == lbport.StateHealthy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("servers never UP: %+v %v", ts, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Long requests on both hosts: round robin spreads them.
	const long = 4
	errs := make(chan error, long)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for range long {
		go func() {
			resp, err := client.Get("http://" + r.hx.Addr + "/slow")
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != 200 {
					err = errors.New(resp.Status)
				}
			}
			errs <- err
		}()
	}
	for _, h := range r.hosts {
		for range long / 2 {
			select {
			case <-h.slow:
			case <-ctx.Done():
				t.Fatal("the long requests never reached every host")
			}
		}
	}
	var mu sync.Mutex
	var notes []deploy.Event
	o := r.options(t, "v2", deploy.ObserverFunc(func(e deploy.Event) {
		if e.Kind == deploy.EventNote {
			mu.Lock()
			notes = append(notes, e)
			mu.Unlock()
		}
	}))
	dep, err := deploy.New(o)
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	res, err := dep.Run(ctx)
	if err != nil {
		t.Fatalf("deploy: %v (%+v)", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	cut := map[string]bool{}
	for _, n := range notes {
		if n.Phase == deploy.PhaseDrain && strings.Contains(n.Detail, "deregistration_delay") && strings.Contains(n.Detail, "shut down") {
			cut[n.Host] = true
		}
	}
	if !cut["web-1"] || !cut["web-2"] {
		t.Fatalf("notes %+v: want each host's sessions shut down at the bound and the deploy saying so", notes)
	}
	for range long {
		if err := <-errs; err == nil {
			t.Fatal("a long request cut at the bound succeeded")
		}
	}
	// Each drain ended at the bound, far below drain.max.
	for _, h := range res.Hosts {
		for _, p := range h.Phases {
			if p.Phase == deploy.PhaseDrain && p.Seconds > 10 {
				t.Errorf("%s drained for %.1fs: the bound (0.3s) was not enforced", h.Host, p.Seconds)
			}
		}
	}
	if el := time.Since(begin); el > time.Minute {
		t.Errorf("deploy took %v", el)
	}
}

func TestPreflight_RefusesHealthDrainWithoutCheck(t *testing.T) {
	r := startRig(t, 2, true)
	r.cfg.Deploy.DrainMode = fleet.DrainModeHealth
	_, _, err := deploylb.ForFleet(context.Background(), r.cfg, "v2", "token", agentconn.NewPool(agentconn.Options{}))
	var fe *fleet.FieldError
	if !errors.Is(err, deploy.ErrPreflight) || !errors.As(err, &fe) || fe.Field != "deploy.drain_mode" || !strings.Contains(err.Error(), "`check`") {
		t.Fatalf("%v, want drain_mode health refused for servers without check", err)
	}
	r.cfg.Deploy.DrainMode = fleet.DrainModeBoth
	d, _ := deploylb.NewDriver(r.cfg)
	rep, err := deploylb.Preflight(context.Background(), r.cfg, d)
	if err != nil || len(rep.NoCheck) != 2 {
		t.Fatalf("drain_mode both without checks: %v %+v, want allowed and reported", err, rep)
	}
}

func TestPreflight_SocketErrors(t *testing.T) {
	r := startRig(t, 1, false)
	tests := []struct {
		name   string
		mutate func(c *fleet.Config)
		want   error
		says   string
	}{
		{"socket missing", func(c *fleet.Config) { c.LoadBalancer.RuntimeAPI += ".gone" }, nil, "level admin"},
		{"unknown backend", func(c *fleet.Config) { c.LoadBalancer.Backend = "nope" }, lbport.ErrTargetGroupNotFound, "load_balancer.backend"},
		{"unknown server", func(c *fleet.Config) { c.Hosts[0].Server = "web-9" }, lbport.ErrInvalidTarget, "hosts[].server"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := *r.cfg
			l.Hosts = append([]fleet.Host(nil), r.cfg.Hosts...)
			tc.mutate(&l.Config)
			_, _, err := deploylb.ForFleet(context.Background(), &l, "v2", "token", agentconn.NewPool(agentconn.Options{}))
			if !errors.Is(err, deploy.ErrPreflight) || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("%v; want ErrPreflight, %v, saying %q", err, tc.want, tc.says)
			}
		})
	}
}

func TestView(t *testing.T) {
	tests := []struct {
		name string
		in   lbport.Target
		reg  bool
		st   string
	}{
		{"healthy", lbport.Target{State: lbport.StateHealthy, InRotation: true}, true, "healthy"},
		{"draining with sessions", lbport.Target{State: lbport.StateDraining, InFlight: 2}, true, "draining"},
		{"drained and idle is out of rotation", lbport.Target{State: lbport.StateDraining}, true, "draining"},
		{"maint", lbport.Target{State: lbport.StateUnused}, false, "unused"},
		{"no check reads as healthy", lbport.Target{State: lbport.StateUnavailable, InRotation: true}, true, "healthy"},
		{"initial", lbport.Target{State: lbport.StateInitial}, true, "initial"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := deploylb.View(tc.in)
			if v.Registered() != tc.reg || v.State.String() != tc.st {
				t.Fatalf("%+v", v)
			}
		})
	}
}

func TestLB_RetriesOnlyTransientFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	cfg := &fleet.Loaded{Config: fleet.Default()}
	cfg.LoadBalancer.Kind, cfg.LoadBalancer.Backend = fleet.KindHAProxy, "app"
	cfg.Hosts = []fleet.Host{{Name: "web-1", Target: "127.0.0.1:1"}}

	cfg.LoadBalancer.RuntimeAPI = "tcp:" + refused
	d, err := deploylb.NewDriver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	err = deploylb.LB{Driver: d, RetryFor: 300 * time.Millisecond}.Deregister(context.Background(), lbport.TargetRef{ID: "web-1"})
	if !lbport.IsTransient(err) || time.Since(begin) < 100*time.Millisecond {
		t.Fatalf("a refused socket: %v after %v, want retries within the bound, then the error", err, time.Since(begin))
	}

	cfg.LoadBalancer.RuntimeAPI = "unix:" + filepath.Join(t.TempDir(), "missing.sock")
	d, _ = deploylb.NewDriver(cfg)
	begin = time.Now()
	err = deploylb.LB{Driver: d, RetryFor: 10 * time.Second}.Deregister(context.Background(), lbport.TargetRef{ID: "web-1"})
	if err == nil || lbport.IsTransient(err) || time.Since(begin) > 5*time.Second {
		t.Fatalf("a missing socket: %v after %v, want a permanent error at once", err, time.Since(begin))
	}
}

// A health-flip drain behind HAProxy: no state change, HAProxy's own checks
// take the server out (DOWN after fall), and back in after rise.
func TestDeploy_HealthDrain(t *testing.T) {
	t.Parallel() // its own HAProxy, hosts and ports
	r := startRig(t, 2, false)
	r.cfg.Deploy.DrainMode = fleet.DrainModeHealth
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dep, err := deploy.New(r.options(t, "v2", nil))
	if err != nil {
		t.Fatal(err)
	}
	res, err := dep.Run(ctx)
	if err != nil {
		t.Fatalf("deploy: %v", err)
	}
	for _, h := range r.hosts {
		if st, _ := h.Status(ctx); st.Definitions.Current.Version != "v2" {
			t.Errorf("%s on %s", h.name, st.Definitions.Current.Version)
		}
	}
	// The drain waited for HAProxy's checks: at least (fall − 1) × inter.
	for _, h := range res.Hosts {
		for _, p := range h.Phases {
			if p.Phase == deploy.PhaseDrain && p.Seconds < 0.1 {
				t.Errorf("%s drained in %.3fs, before HAProxy's checks could see the flip", h.Host, p.Seconds)
			}
		}
	}
}

func TestNewDriver_RequiresRuntimeAPIAndBackend(t *testing.T) {
	for _, tc := range []struct{ api, backend, field string }{
		{"", "app", "load_balancer.runtime_api"},
		{"unix:/run/haproxy/admin.sock", "", "load_balancer.backend"},
	} {
		cfg := &fleet.Loaded{Path: "m.yml", Config: fleet.Default()}
		cfg.LoadBalancer.Kind, cfg.LoadBalancer.RuntimeAPI, cfg.LoadBalancer.Backend = fleet.KindHAProxy, tc.api, tc.backend
		_, err := deploylb.NewDriver(cfg)
		var fe *fleet.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, fleet.ErrInvalid) {
			t.Fatalf("%+v: %v, want a FieldError on %s", tc, err, tc.field)
		}
	}
}

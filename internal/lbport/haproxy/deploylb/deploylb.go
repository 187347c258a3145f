// Package deploylb lets the rolling deploy drive an HAProxy backend: it
// adapts the haproxy lbport.Driver to the deploy's own LB interface and
// builds a deploy's Options for a fleet of load_balancer.kind haproxy,
// after a preflight that changes nothing. It is a bridge until the deploy
// speaks lbport.Driver itself; then the deploy takes the driver directly.
package deploylb

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/haproxy"
)

// LB is the deploy's LB over an HAProxy backend. It also implements
// lbport.SessionCutter, so the deploy enforces the deregistration delay.
type LB struct {
	// Driver drives the backend.
	Driver *haproxy.Driver
	// Targets maps a host's name to its target address.
	Targets map[string]string
	// RetryFor bounds how long Register, Deregister and CutSessions retry a
	// transient failure (the socket refusing while HAProxy reloads).
	// Default DefaultRetryFor; negative: no retry.
	RetryFor time.Duration
}

// DefaultRetryFor is LB.RetryFor's default: longer than an HAProxy reload
// takes to bring its socket back.
const DefaultRetryFor = 5 * time.Second

var (
	_ lbport.Driver        = LB{}
	_ lbport.SessionCutter = LB{}
)

// Kind is the driver's.
func (l LB) Kind() string { return l.Driver.Kind() }

// Describe reports the targets through the driver in one call, each as the
// deploy should read it (View).
func (l LB) Describe(ctx context.Context, refs ...lbport.TargetRef) ([]lbport.Target, error) {
	own := make([]lbport.TargetRef, len(refs))
	for i, r := range refs {
		own[i] = l.ref(r.ID)
	}
	ts, err := l.Driver.Describe(ctx, own...)
	if err != nil {
		return nil, err
	}
	for i := range ts {
		ts[i] = View(ts[i])
	}
	return ts, nil
}

// View is how the deploy reads an HAProxy target: a server without a
// health check (state unavailable) that is in rotation reads as healthy,
// so the deploy's "back in service" holds for it.
func View(t lbport.Target) lbport.Target {
	if t.State == lbport.StateUnavailable && t.InRotation {
		t.State = lbport.StateHealthy
	}
	return t
}

// Settings are the driver's.
func (l LB) Settings(ctx context.Context) (lbport.Settings, error) { return l.Driver.Settings(ctx) }

// Apply is the driver's.
func (l LB) Apply(ctx context.Context, s lbport.Settings) error { return l.Driver.Apply(ctx, s) }

// Register sets the server ready.
func (l LB) Register(ctx context.Context, t lbport.TargetRef) error {
	return l.retry(ctx, func(ctx context.Context) error { return l.Driver.Register(ctx, l.ref(t.ID)) })
}

// Deregister sets the server to drain.
func (l LB) Deregister(ctx context.Context, t lbport.TargetRef) error {
	return l.retry(ctx, func(ctx context.Context) error { return l.Driver.Deregister(ctx, l.ref(t.ID)) })
}

// CutSessions shuts down the server's sessions.
func (l LB) CutSessions(ctx context.Context, t lbport.TargetRef) error {
	return l.retry(ctx, func(ctx context.Context) error { return l.Driver.CutSessions(ctx, t) })
}

// retry runs fn until it succeeds, fails for good (lbport.IsTransient false)
// or RetryFor has passed, backing off from 50ms to 1s. The deploy's polling
// retries Describe by itself; a state change it sends once, so a reload of
// HAProxy at that moment must not fail the host.
func (l LB) retry(ctx context.Context, fn func(context.Context) error) error {
	bound := l.RetryFor
	if bound == 0 {
		bound = DefaultRetryFor
	}
	deadline := time.Now().Add(bound)
	wait := 50 * time.Millisecond
	for {
		err := fn(ctx)
		if err == nil || !lbport.IsTransient(err) || !time.Now().Add(wait).Before(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

func (l LB) ref(id string) lbport.TargetRef { return lbport.TargetRef{ID: id, Address: l.Targets[id]} }

// NewDriver builds the haproxy driver of cfg (kind haproxy): the Runtime API
// at load_balancer.runtime_api, the backend load_balancer.backend, each
// host's server (hosts[].server, default its name), and haproxy.cfg at
// load_balancer.config_file (relative to mythex.yml) when set.
func NewDriver(cfg *fleet.Loaded) (*haproxy.Driver, error) {
	lb := cfg.LoadBalancer
	if lb.RuntimeAPI == "" {
		return nil, &fleet.FieldError{File: cfg.Path, Field: "load_balancer.runtime_api",
			Msg: "is required to drive HAProxy: the admin stats socket, e.g. unix:/run/haproxy/admin.sock (haproxy.cfg: `stats socket /run/haproxy/admin.sock mode 600 level admin`) or tcp:127.0.0.1:9999"}
	}
	if lb.Backend == "" {
		return nil, &fleet.FieldError{File: cfg.Path, Field: "load_balancer.backend",
			Msg: "is required to drive HAProxy: the backend whose servers are the hosts, as on its `backend` line in haproxy.cfg"}
	}
	addr, err := haproxy.ParseAddress(lb.RuntimeAPI)
	if err != nil {
		return nil, &fleet.FieldError{File: cfg.Path, Field: "load_balancer.runtime_api", Msg: err.Error()}
	}
	servers := map[string]string{}
	for _, h := range cfg.Hosts {
		servers[h.Name] = h.ServerName()
	}
	cf := lb.ConfigFile
	if cf != "" && !filepath.IsAbs(cf) && cfg.Path != "" {
		cf = filepath.Join(filepath.Dir(cfg.Path), cf)
	}
	d, err := haproxy.New(haproxy.Config{Client: haproxy.NewClient(addr), Backend: lb.Backend, Servers: servers, ConfigFile: cf})
	if err != nil {
		return nil, &fleet.FieldError{File: cfg.Path, Field: "load_balancer.backend", Msg: err.Error()}
	}
	return d, nil
}

// Preflight checks the HAProxy of cfg before a deploy, changing nothing (see
// haproxy.Driver.Preflight), and refuses deploy.drain_mode health when a
// host's server has no health check: HAProxy would never take it out of
// rotation for a failing check, so the drain could not be proved. Errors
// wrap deploy.ErrPreflight (exit 2).
func Preflight(ctx context.Context, cfg *fleet.Loaded, d *haproxy.Driver) (haproxy.Report, error) {
	ids := make([]string, 0, len(cfg.Hosts))
	for _, h := range cfg.Hosts {
		ids = append(ids, h.Name)
	}
	rep, err := d.Preflight(ctx, ids)
	if err != nil {
		return rep, fmt.Errorf("%w: %w", deploy.ErrPreflight, err)
	}
	if len(rep.NoCheck) > 0 && cfg.Deploy.DrainMode == fleet.DrainModeHealth {
		return rep, fmt.Errorf("%w: %w", deploy.ErrPreflight, NoCheckError(cfg, rep.NoCheck))
	}
	return rep, nil
}

// NoCheckError is the refusal of drain_mode health for servers without a
// health check.
func NoCheckError(cfg *fleet.Loaded, servers []string) error {
	return &fleet.FieldError{File: cfg.Path, Field: "deploy.drain_mode",
		Msg: fmt.Sprintf("health cannot prove %s out of rotation: HAProxy has no health check for it (`check` is missing on its `server` line), so a failing health endpoint never takes it out; add `check` in haproxy.cfg, or use drain_mode deregister or both",
			strings.Join(servers, ", "))}
}

// ForFleet builds the Options of a deploy of version to a fleet behind
// HAProxy, after Preflight: the hosts and definitions as for any fleet, the
// backend as the LB, and load_balancer.listen (HAProxy's frontend) as the
// address the deploy verifies through. The Report says, among others, which
// servers have no health check (the caller warns). agents reaches the
// hosts' agents (see deploy.ForFleet).
func ForFleet(ctx context.Context, cfg *fleet.Loaded, version, agentToken string, agents deploy.Connector) (deploy.Options, haproxy.Report, error) {
	if cfg.LoadBalancer.Kind != fleet.KindHAProxy {
		return deploy.Options{}, haproxy.Report{}, errors.New("deploylb: not a fleet of kind haproxy")
	}
	d, err := NewDriver(cfg)
	if err != nil {
		return deploy.Options{}, haproxy.Report{}, err
	}
	rep, err := Preflight(ctx, cfg, d)
	if err != nil {
		return deploy.Options{}, rep, err
	}
	// The deploy's builder knows the embedded LB only; it is asked for the
	// hosts and definitions with that kind, and the LB replaced.
	asEmbedded := *cfg
	asEmbedded.LoadBalancer.Kind = fleet.KindEmbedded
	o, err := deploy.ForFleet(ctx, &asEmbedded, version, agentToken, "", agents)
	if err != nil {
		return deploy.Options{}, rep, err
	}
	targets := map[string]string{}
	for _, h := range cfg.Hosts {
		targets[h.Name] = h.Target
	}
	o.Config = &cfg.Config
	o.LB = LB{Driver: d, Targets: targets}
	o.Front = &deploy.HTTPFront{URL: "http://" + cfg.LoadBalancer.Listen + "/"}
	return o, rep, nil
}

package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
)

// capLB is a load balancer whose targets turn healthy the moment they are
// registered; it records the recovery's calls.
type capLB struct {
	mu      sync.Mutex
	targets map[string]lbport.Target
	calls   []string
	// onDeregister runs (locked) after a deregistration: a peer leaving at
	// the same moment.
	onDeregister func(map[string]lbport.Target)
}

func (l *capLB) Kind() string { return "fake" }

func (l *capLB) set(id string, inService bool) {
	t := lbport.Target{ID: id, State: lbport.StateUnhealthy, Reason: lbport.ReasonFailedHealthChecks}
	if inService {
		t = lbport.Target{ID: id, State: lbport.StateHealthy, InRotation: true}
	}
	l.targets[id] = t
}

func (l *capLB) Register(_ context.Context, t lbport.TargetRef) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, "register "+t.ID)
	l.set(t.ID, true)
	return nil
}

func (l *capLB) Deregister(_ context.Context, t lbport.TargetRef) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, "deregister "+t.ID)
	l.targets[t.ID] = lbport.Target{ID: t.ID, State: lbport.StateDraining, Reason: lbport.ReasonDeregistrationInProgress}
	if l.onDeregister != nil {
		l.onDeregister(l.targets)
	}
	return nil
}

func (l *capLB) Describe(_ context.Context, ts ...lbport.TargetRef) ([]lbport.Target, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]lbport.Target, len(ts))
	for i, r := range ts {
		t, ok := l.targets[r.ID]
		if !ok {
			t = lbport.Target{ID: r.ID, State: lbport.StateUnused, Reason: lbport.ReasonNotRegistered}
		}
		out[i] = t
	}
	return out, nil
}

func (l *capLB) Settings(context.Context) (lbport.Settings, error) {
	return lbport.Settings{}, lbport.ErrUnsupported
}
func (l *capLB) Apply(context.Context, lbport.Settings) error { return lbport.ErrUnsupported }

func (l *capLB) log() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

func (l *capLB) inService(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return lbport.InService(l.targets[id])
}

// The recovery of a host that serves (a deploy died after putting the new
// version into rotation, during its look twice) keeps the fleet's capacity
// as a deploy does: it takes the host out of rotation only with enough
// other targets in service, drains it first, and never leaves it out.
func TestAgent_RecoveryKeepsCapacity(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// self and peer: whether the LB reports them in service when the
		// lease ends.
		self, peer bool
		// selfRouted: the LB reports the host unhealthy, yet routes to it
		// (in rotation, requests in flight) — as it did when a starved
		// host's checks timed out after a first recovery attempt put it
		// back; stopping it then dropped a request.
		selfRouted bool
		// peerLeaves: the peer leaves rotation the moment this host does.
		peerLeaves bool
		wantCalls  []string
		// restored: the recovery returns the host to v1; otherwise it
		// fails, the host untouched, on v2 in rotation.
		restored bool
	}{
		{"a peer serves: drained, restored, back in rotation", true, true, false, false, []string{"deregister web-1", "register web-1"}, true},
		{"no peer serves: the host keeps serving, the recovery waits and fails", true, false, false, false, nil, false},
		{"a peer leaves at the same moment: back into rotation, tried again later", true, true, false, true, []string{"deregister web-1", "register web-1"}, false},
		{"drained already by the dead deploy: no capacity needed", false, false, false, false, []string{"register web-1"}, true},
		{"unhealthy but still routed to: drained first like a serving host", false, true, true, false, []string{"deregister web-1", "register web-1"}, true},
		{"unhealthy but still routed to, no peer in service: drained at once, no capacity wait", false, false, true, false, []string{"deregister web-1", "register web-1"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dir := memDir(t)
			rt := newRaceRuntime(dir, 1, 0)
			lb := &capLB{targets: map[string]lbport.Target{}}
			a, err := New(Config{Host: "web-1", StateDir: dir, Runtime: rt, RuntimeName: "race", StartTimeout: time.Second,
				Recovery: Recovery{LB: lb, TargetID: "web-1", TargetAddress: "127.0.0.1:1",
					Capacity: Capacity{Peers: []lbport.TargetRef{{ID: "web-2"}}, MinInService: 1, Wait: 100 * time.Millisecond, DrainWait: 100 * time.Millisecond, Poll: time.Millisecond}}})
			if err != nil {
				t.Fatal(err)
			}
			c := serveAgent(t, a)
			h := &raceHost{t: t}
			for _, v := range []string{"v1", "v2"} {
				l, err := c.AcquireLease(ctx, false, "deploy "+v, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.Publish(ctx, l.ID, h.definition(v)); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Stop(ctx, l.ID); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Start(ctx, l.ID); err != nil {
					t.Fatal(err)
				}
				if v == "v1" {
					if err := c.MarkGood(ctx, l.ID); err != nil {
						t.Fatal(err)
					}
					if err := c.ReleaseLease(ctx, false, l.ID); err != nil {
						t.Fatal(err)
					}
				}
			}
			// The deploy of v2 dies in its look twice: v2 runs, unverified
			// by the fleet; its lease is broken (the same recovery as an
			// expiry, run before the answer).
			lb.mu.Lock()
			lb.set("web-1", tc.self)
			lb.set("web-2", tc.peer)
			if tc.selfRouted {
				lb.targets["web-1"] = lbport.Target{ID: "web-1", State: lbport.StateUnhealthy, Reason: lbport.ReasonTimeout, InRotation: true, InFlight: 3}
			}
			if tc.peerLeaves {
				lb.onDeregister = func(ts map[string]lbport.Target) {
					ts["web-2"] = lbport.Target{ID: "web-2", State: lbport.StateDraining, Reason: lbport.ReasonDeregistrationInProgress}
				}
			}
			lb.mu.Unlock()
			rep, err := c.BreakLease(ctx, false, true, "test")
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Recovery
			if r == nil {
				t.Fatal("no recovery reported")
			}
			if got := lb.log(); !slices.Equal(got, tc.wantCalls) {
				t.Errorf("load balancer calls = %q, want %q", got, tc.wantCalls)
			}
			if tc.self && !lb.inService("web-1") {
				t.Error("the recovery left the host out of rotation")
			}
			running := map[string]bool{}
			sts, _ := rt.Status(ctx)
			for _, s := range sts {
				if s.Running() {
					running[s.Version] = true
				}
			}
			if tc.restored {
				if r.State != agentapi.RecoveryRestored || r.Version != "v1" || running["v2"] {
					t.Errorf("recovery = %+v, running %v; want restored to v1", r, running)
				}
				return
			}
			if r.State != agentapi.RecoveryFailed || !strings.Contains(r.Error, "capacity") || running["v1"] || !running["v2"] {
				t.Errorf("recovery = %+v, running %v; want failed on capacity with v2 still serving, untouched", r, running)
			}
			if !tc.peerLeaves && !strings.Contains(r.Error, "web-2") {
				t.Errorf("the refusal does not name the peer that is out: %s", r.Error)
			}
		})
	}
}

func TestCapacityFrom(t *testing.T) {
	t.Parallel()
	ref := func(h fleet.Host) lbport.TargetRef { return lbport.TargetRef{ID: h.Name, Address: h.Target} }
	cases := []struct {
		name      string
		min       string
		hosts     int
		wantNeed  int
		wantPeers int
		wantErr   bool
	}{
		{"default: one", "", 3, 1, 2, false},
		{"a count", "2", 4, 2, 3, false},
		{"a percentage of the fleet, rounded up", "50%", 5, 3, 4, false},
		{"bad input names the field", "half", 3, 0, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fleet.Config{}
			cfg.Deploy.MinInService = tc.min
			cfg.Drain.Max = 15 * time.Second
			cfg.LoadBalancer.HealthCheck = fleet.HealthCheck{Interval: time.Second, Timeout: 500 * time.Millisecond, HealthyThreshold: 2}
			for i := range tc.hosts {
				cfg.Hosts = append(cfg.Hosts, fleet.Host{Name: fmt.Sprintf("web-%d", i+1), Target: fmt.Sprintf("10.0.0.%d:80", i+1)})
			}
			c, err := CapacityFrom(&cfg, "web-1", ref)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "deploy.min_in_service") {
					t.Fatalf("err = %v, want one naming deploy.min_in_service", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.MinInService != tc.wantNeed || len(c.Peers) != tc.wantPeers || slices.ContainsFunc(c.Peers, func(r lbport.TargetRef) bool { return r.ID == "web-1" }) {
				t.Errorf("capacity = %+v, want %d of %d peers (web-1 not among them)", c, tc.wantNeed, tc.wantPeers)
			}
			if c.DrainWait != cfg.Drain.Max || c.Wait <= 0 || c.Poll <= 0 {
				t.Errorf("capacity waits = %+v, want drain.max and positive waits", c)
			}
		})
	}
}

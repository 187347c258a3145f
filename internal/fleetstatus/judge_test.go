package fleetstatus

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/lbport"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func agentOn(version string, mods ...func(*agentapi.Status)) *agentapi.Status {
	started := now.Add(-time.Hour)
	st := &agentapi.Status{
		Definitions: agentapi.Definitions{Current: &agentapi.DefinitionRef{Version: version}, LastGood: &agentapi.DefinitionRef{Version: version}},
		Services: []agentapi.ServiceStatus{
			{Name: "api", Version: version, Running: true, Health: agentapi.HealthHealthy, StartedAt: &started},
			{Name: "gateway", Version: version, Running: true, Health: agentapi.HealthHealthy, StartedAt: &started},
		},
	}
	for _, m := range mods {
		m(st)
	}
	return st
}

func healthy() *lbport.Target {
	return &lbport.Target{State: lbport.StateHealthy, InRotation: true}
}

func TestJudge(t *testing.T) {
	down := func(st *agentapi.Status) { st.Services[1].Running = false }
	leased := func(st *agentapi.Status) {
		st.Lease = &agentapi.Lease{Holder: "deploy v2 by ci", Expires: now.Add(20 * time.Second)}
	}
	cases := []struct {
		name     string
		obs      []Observation
		ok       bool
		summary  string
		problems map[string]string // host → a problem it must list
	}{
		{"all on one version and in rotation", []Observation{
			{Host: "web-1", Agent: agentOn("v1"), Target: healthy()},
			{Host: "web-2", Agent: agentOn("v1"), Target: healthy()},
		}, true, "healthy: 2 of 2 hosts on v1", nil},
		{"a service down", []Observation{
			{Host: "web-1", Agent: agentOn("v1", down), Target: healthy()},
			{Host: "web-2", Agent: agentOn("v1"), Target: healthy()},
		}, false, "1 of 2 hosts need attention (web-1)", map[string]string{"web-1": "gateway is down"}},
		{"out of rotation at the LB", []Observation{
			{Host: "web-1", Agent: agentOn("v1"), Target: &lbport.Target{State: lbport.StateUnused, Reason: lbport.ReasonNotRegistered}},
			{Host: "web-2", Agent: agentOn("v1"), Target: healthy()},
		}, false, "web-1", map[string]string{"web-1": "unused Target.NotRegistered"}},
		{"mixed versions outside a deploy", []Observation{
			{Host: "web-1", Agent: agentOn("v2"), Target: healthy()},
			{Host: "web-2", Agent: agentOn("v1"), Target: healthy()},
		}, false, "different versions (v1, v2)", nil},
		{"mixed versions during a deploy", []Observation{
			{Host: "web-1", Agent: agentOn("v2", leased), Target: &lbport.Target{State: lbport.StateDraining}},
			{Host: "web-2", Agent: agentOn("v1"), Target: healthy()},
		}, true, "a deploy is in progress", nil},
		{"agent unreachable", []Observation{
			{Host: "web-1", AgentErr: errors.New("connection refused"), Target: healthy()},
		}, false, "web-1", map[string]string{"web-1": "agent unreachable: connection refused"}},
		{"load balancer unreadable", []Observation{
			{Host: "web-1", Agent: agentOn("v1"), TargetErr: errors.New("401")},
		}, false, "web-1", map[string]string{"web-1": "load balancer unreadable"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.obs, now)
			if v.OK != tc.ok || !strings.Contains(v.Summary, tc.summary) {
				t.Fatalf("Judge = ok %v %q; want ok %v containing %q", v.OK, v.Summary, tc.ok, tc.summary)
			}
			for host, want := range tc.problems {
				found := false
				for _, h := range v.Hosts {
					if h.Host == host && strings.Contains(strings.Join(h.Problems, "; "), want) {
						found = true
					}
				}
				if !found {
					t.Errorf("host %s: problems do not mention %q: %+v", host, want, v.Hosts)
				}
			}
		})
	}
	// The agent lists the stopped instances of the previous version beside
	// the running ones: they are history, not a service down.
	stale := func(st *agentapi.Status) {
		code := 0
		st.Services = append([]agentapi.ServiceStatus{{Name: "gateway", Version: "v0", ExitCode: &code}, {Name: "api", Version: "v0", ExitCode: &code}}, st.Services...)
	}
	if v := Judge([]Observation{{Host: "web-1", Agent: agentOn("v1", stale), Target: healthy()}}, now); !v.OK || len(v.Hosts[0].Services) != 2 || !v.Hosts[0].Services[0].Running {
		t.Errorf("stopped old instances made the host degraded or doubled its services: %+v", v)
	}
	v := Judge([]Observation{{Host: "web-1", Agent: agentOn("v1"), Target: healthy()}}, now)
	if h := v.Hosts[0]; h.Services[0].Uptime != 3600 || h.Current != "v1" || h.LastGood != "v1" || h.LB.State != "healthy" {
		t.Errorf("host line %+v: want uptime 3600s, current and last good v1, LB healthy", h)
	}
}

type agentFunc func(ctx context.Context) (agentapi.Status, error)

func (f agentFunc) Status(ctx context.Context) (agentapi.Status, error) { return f(ctx) }

type hungLB struct{ lbport.Driver }

func (hungLB) Describe(ctx context.Context, _ ...lbport.TargetRef) ([]lbport.Target, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestCollect_OneRoundBounded: a hung load balancer or agent costs one
// timeout, not one per host, and the others are still read.
func TestCollect_OneRoundBounded(t *testing.T) {
	ok := agentFunc(func(context.Context) (agentapi.Status, error) { return *agentOn("v1"), nil })
	hung := agentFunc(func(ctx context.Context) (agentapi.Status, error) { <-ctx.Done(); return agentapi.Status{}, ctx.Err() })
	hosts := []Host{{Name: "web-1", Agent: ok}, {Name: "web-2", Agent: hung}, {Name: "web-3", AgentErr: errors.New("ssh: host key changed")}}
	for i := 4; i <= 10; i++ {
		hosts = append(hosts, Host{Name: "web-x", Agent: hung})
	}
	begin := time.Now()
	obs := Collect(context.Background(), hosts, hungLB{}, time.Second)
	if el := time.Since(begin); el > 5*time.Second {
		t.Errorf("one round took %v with a 1s bound over 8 hung agents: calls were not in parallel", el)
	}
	if obs[0].Agent == nil || obs[1].AgentErr == nil || obs[2].AgentErr == nil || obs[0].TargetErr == nil {
		t.Fatalf("observations %+v: want web-1 read, web-2 timed out, web-3's dial error, the LB's timeout", obs[:3])
	}
}

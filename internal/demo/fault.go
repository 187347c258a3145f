package demo

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
)

// Fault is one thing that goes wrong during the demo's deploy, what mythex
// is expected to do about it, and how many requests may reach nothing.
// Faults are registered in Faults by name; a new one (agent-kill, once the
// agent keeps its lease across a restart) is one more entry.
type Fault struct {
	// Name is what --fault takes.
	Name string
	// What says what goes wrong, for --help and the report.
	What string
	// Expect says what mythex does about it.
	Expect string
	// Vars are extra compose variables of the new version (late-crash).
	Vars func(cfg *fleet.Config) map[string]string
	// Before breaks something before the deploy starts (degraded-fleet).
	Before func(ctx context.Context, f *Fleet) error
	// During, when set, is called with every deploy event and may inject
	// the fault in the middle of the deploy (lb-restart).
	During func(ctx context.Context, f *Fleet, e deploy.Event)
	// Deploy, when set, replaces the in-process deploy (deployer-kill runs
	// `mythex deploy` as its own process to kill it).
	Deploy func(ctx context.Context, f *Fleet, exe, version string, obs deploy.Observer) (deploy.Result, error)
	// After repairs what the fault broke outside mythex's hands (an
	// operator's deregistration), so that the fleet's final state can be
	// judged.
	After func(ctx context.Context, f *Fleet) error
	// Settle bounds the wait for the fleet's final state after the deploy
	// (the agents' lease-expiry recovery takes a lease TTL).
	Settle func(cfg *fleet.Config) time.Duration
	// DeployOK says whether the deploy itself should succeed.
	DeployOK bool
	// NewVersionWins says whether the fleet should end on the new version
	// (true) or on the old one (false).
	NewVersionWins bool
	// AnyVersion: the fleet may end on either version — but on one, verified
	// and in rotation everywhere (agent-kill: whether the deploy carries on
	// with the lease the restarted agent resumed, or fails and rolls back,
	// depends on when the agent comes back).
	AnyVersion bool
	// Bound is the most requests that may reach nothing at rate req/s on
	// hosts hosts, with conns the connections the load opened (a bound on
	// those it held open at any moment): the physical cost of the fault,
	// never ours.
	Bound func(cfg *fleet.Config, rate float64, hosts int, conns int64) int64
}

// Faults are the faults `mythex demo --fault` can inject, by name.
var Faults = map[string]Fault{}

func register(f Fault) { Faults[f.Name] = f }

// FaultNames lists the faults, sorted.
func FaultNames() []string {
	names := make([]string, 0, len(Faults))
	for n := range Faults {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// crashDetect is the physical cost of a crash behind the load balancer: the
// LB needs unhealthy_threshold checks, the first up to an interval away,
// each up to the timeout, before it stops routing to a dead target
// (I·U + T); a request is lost to it only if routed to that target, one in
// hosts.
func crashDetect(cfg *fleet.Config, rate float64, hosts int, _ int64) int64 {
	hc := cfg.LoadBalancer.HealthCheck
	window := time.Duration(hc.UnhealthyThreshold)*hc.Interval + hc.Timeout
	return int64(math.Ceil(rate * window.Seconds() / float64(max(hosts, 1))))
}

func zero(*fleet.Config, float64, int, int64) int64 { return 0 }

// keepAliveRace is the cost of stopping a load balancer process: it closes
// its clients' idle keep-alive connections, and a request a client writes
// onto one at that moment dies with it — at most one per connection the
// load held open. HTTP clients retry such an idempotent request; the
// prober counts it.
func keepAliveRace(_ *fleet.Config, _ float64, _ int, conns int64) int64 { return conns }

func init() {
	register(Fault{
		Name: "late-crash",
		What: "the new version's gateway serves and passes its health checks, then exits (MYTHEX_APP_CRASH_AFTER) inside min_healthy_time",
		Expect: "look twice catches the exit on the first host: it is rolled back, the release never reaches a second host, " +
			"the fleet ends on the old version (exit 1)",
		Vars: func(cfg *fleet.Config) map[string]string {
			// The release: exits 5s after it starts, with Nomad's
			// 10s min_healthy_time (both scaled) — after it answered its
			// health checks and the LB called it healthy.
			return map[string]string{"GATEWAY_CRASH_AFTER": (cfg.Deploy.MinHealthyTime / 2).String()}
		},
		Bound: crashDetect,
	})
	register(Fault{
		Name: "degraded-fleet",
		What: "before the deploy, web-2 … web-N are deregistered at the load balancer (behind HAProxy: set to drain): web-1 is the only target in rotation",
		Expect: "the live capacity check refuses to drain web-1, naming the hosts that are out; the deploy fails with nothing changed; " +
			"the operator's targets are registered again afterwards",
		Before: func(ctx context.Context, f *Fleet) error {
			d, err := f.lbDriver()
			if err != nil {
				return err
			}
			for i := 1; i < len(f.Loaded.Hosts); i++ {
				if err := d.Deregister(ctx, f.lbRef(i)); err != nil {
					return fmt.Errorf("deregister %s: %w", f.Loaded.Hosts[i].Name, err)
				}
			}
			return nil
		},
		After: func(ctx context.Context, f *Fleet) error {
			d, err := f.lbDriver()
			if err != nil {
				return err
			}
			for i := 1; i < len(f.Loaded.Hosts); i++ {
				if err := d.Register(ctx, f.lbRef(i)); err != nil {
					return fmt.Errorf("register %s again: %w", f.Loaded.Hosts[i].Name, err)
				}
			}
			return nil
		},
		Bound: zero,
	})
	register(Fault{
		Name: "deployer-kill",
		What: "`mythex deploy` runs as its own process and is SIGKILLed when web-2 begins to stop (web-1 already moved, unverified by the fleet)",
		Expect: "nothing finishes the deploy; when the host leases lapse each agent returns its host to its last good version " +
			"and registers it again: the fleet ends on the old version, in rotation",
		Deploy: killedDeploy,
		Settle: func(cfg *fleet.Config) time.Duration {
			return cfg.Deploy.LeaseTTL + cfg.Drain.Max + 4*healthyWait(cfg)
		},
		Bound: zero,
	})
	register(Fault{
		Name: "lb-restart",
		What: "the load balancer restarts mid-deploy. The embedded LB, as web-2 goes back into rotation: its admin API refuses connections for the restart, " +
			"its listener is handed over (as HAProxy's seamless reload) and its targets are restored. HAProxy (--lb haproxy), as web-2 begins to drain: " +
			"a soft reload (haproxy -sf, as systemctl reload) whose new process starts from haproxy.cfg, so web-2's drain is lost",
		Expect: "calls to the load balancer's API are retried (bounded); behind HAProxy a drain the reload lost is set again at the deploy's next poll " +
			"while it waits for the drain, and after that web-2's failing health check (drain_mode both) takes it out; the deploy completes on every host",
		During: func(ctx context.Context, f *Fleet, e deploy.Event) {
			victim := f.Loaded.Hosts[min(1, len(f.Loaded.Hosts)-1)].Name
			// The embedded LB: while the deployer registers web-2 and polls
			// the LB for its health, its calls meet the restart. HAProxy:
			// while web-2 drains, so the reload forgets the drain.
			at := deploy.PhaseHealthy
			if f.haproxy != nil {
				at = deploy.PhaseDrain
			}
			if e.Host == victim && e.Phase == at && e.Kind == deploy.EventBegin {
				go f.restartLBOnce(ctx)
			}
		},
		DeployOK:       true,
		NewVersionWins: true,
		Bound:          keepAliveRace,
	})
}

func init() {
	register(Fault{
		Name: "agent-kill",
		What: "web-1's agent is SIGKILLed as web-1 begins to stop (its services keep running) and started again a lease TTL later",
		Expect: "the restarted agent resumes the lease it persisted; the deploy either carries on through it or fails web-1 and the " +
			"fleet is rolled back, and the agent's own recovery returns web-1 to its last good version: one version everywhere, in rotation",
		During: func(ctx context.Context, f *Fleet, e deploy.Event) {
			if e.Host == f.Loaded.Hosts[0].Name && e.Phase == deploy.PhaseStop && e.Kind == deploy.EventBegin {
				go f.killAgentOnce(ctx, 0, f.Loaded.Deploy.LeaseTTL)
			}
		},
		Settle: func(cfg *fleet.Config) time.Duration {
			return 2*cfg.Deploy.LeaseTTL + cfg.Drain.Max + 4*healthyWait(cfg)
		},
		AnyVersion: true,
		Bound:      zero,
	})
}

// healthyWait is how long a target needs to be called healthy again.
func healthyWait(cfg *fleet.Config) time.Duration {
	hc := cfg.LoadBalancer.HealthCheck
	return time.Duration(hc.HealthyThreshold+1)*(hc.Interval+hc.Timeout) + time.Second
}

// FaultReport is what a fault run found.
type FaultReport struct {
	Fault string `json:"fault"`
	// RolledBack is true when the deploy (or the agents' recovery) returned
	// the fleet to the old version.
	RolledBack bool `json:"rolled_back"`
	// FleetVersionAfter is the one version every host runs, verified and in
	// rotation, once the fleet settled; "" when it did not settle.
	FleetVersionAfter string `json:"fleet_version_after"`
	// WantVersion is the version the fleet should end on.
	WantVersion string `json:"want_version"`
	// ReachedNothing and ReachedNothingBound are the requests that reached
	// nothing and the most the fault may cost.
	ReachedNothing      int64 `json:"reached_nothing"`
	ReachedNothingBound int64 `json:"reached_nothing_bound"`
	// Settled says why the fleet did not settle, when it did not.
	Unsettled string `json:"unsettled,omitempty"`
	// HostsReached names the hosts the new version reached.
	HostsReached []string `json:"hosts_reached,omitempty"`
}

// OK says whether mythex handled the fault: the fleet settled on the
// version it should, and no more requests reached nothing than the bound.
func (r FaultReport) OK() bool {
	return r.FleetVersionAfter != "" && r.FleetVersionAfter == r.WantVersion && r.ReachedNothing <= r.ReachedNothingBound
}

// FaultHelp describes every fault for --help.
func FaultHelp() string {
	var b strings.Builder
	for _, n := range FaultNames() {
		fmt.Fprintf(&b, "  %-15s %s\n  %-15s → %s\n", n, Faults[n].What, "", Faults[n].Expect)
	}
	return b.String()
}

package fleetstatus

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/lbport"
)

// HostVerdict is the judgement of one host.
type HostVerdict struct {
	Host string `json:"host"`
	// Current, Previous and LastGood are the versions the agent keeps.
	Current  string `json:"current,omitempty"`
	Previous string `json:"previous,omitempty"`
	LastGood string `json:"last_good,omitempty"`
	// Services are the host's services as the agent reports them.
	Services []ServiceLine `json:"services,omitempty"`
	// LB is the load balancer's state and reason for the host's target.
	LB *TargetLine `json:"lb,omitempty"`
	// Lease is the deploy lease on the host, if one is held.
	Lease *LeaseLine `json:"lease,omitempty"`
	// Maintenance is set while the watchdog is paused.
	Maintenance *agentapi.Maintenance `json:"maintenance,omitempty"`
	// Watchdog is false when the agent runs no watchdog.
	Watchdog bool `json:"watchdog"`
	// Problems say what is degraded on this host; empty when it is fine.
	Problems []string `json:"problems,omitempty"`
}

// ServiceLine is one service.
type ServiceLine struct {
	Name    string  `json:"name"`
	Version string  `json:"version,omitempty"`
	Running bool    `json:"running"`
	Health  string  `json:"health,omitempty"`
	Uptime  float64 `json:"uptime_seconds,omitempty"`
	// LastExit is the latest exit code, when the service has exited.
	LastExit *int `json:"last_exit,omitempty"`
	Restarts int  `json:"restarts,omitempty"`
}

// TargetLine is the load balancer's view of a host's target.
type TargetLine struct {
	State      string `json:"state"`
	Reason     string `json:"reason,omitempty"`
	InRotation bool   `json:"in_rotation"`
	InFlight   int    `json:"in_flight"`
}

// LeaseLine is a held lease.
type LeaseLine struct {
	Holder    string    `json:"holder"`
	Expires   time.Time `json:"expires"`
	ExpiresIn float64   `json:"expires_in_seconds"`
}

// Verdict is the whole fleet's.
type Verdict struct {
	Hosts []HostVerdict `json:"hosts"`
	// OK is false when anything is degraded.
	OK bool `json:"ok"`
	// Deploying is true while some host holds a deploy lease: mixed
	// versions are then expected and not a problem.
	Deploying bool `json:"deploying"`
	// Versions are the distinct current versions, sorted.
	Versions []string `json:"versions"`
	// Summary is the one-line verdict.
	Summary string `json:"summary"`
}

// Judge turns one round of observations into the fleet's verdict, as of now.
// A host is degraded when its agent or the load balancer cannot be read,
// when a service is down or unhealthy, or when its target is not healthy and
// in rotation outside a deploy; the fleet is degraded too when hosts run
// different versions outside a deploy.
func Judge(obs []Observation, now time.Time) Verdict {
	v := Verdict{OK: true}
	for _, o := range obs {
		if o.Agent != nil && (o.Agent.Lease != nil || o.Agent.FleetLease != nil) {
			v.Deploying = true
		}
	}
	for _, o := range obs {
		hv := judgeHost(o, now, v.Deploying)
		if hv.Current != "" && !slices.Contains(v.Versions, hv.Current) {
			v.Versions = append(v.Versions, hv.Current)
		}
		if len(hv.Problems) > 0 {
			v.OK = false
		}
		v.Hosts = append(v.Hosts, hv)
	}
	slices.Sort(v.Versions)
	if len(v.Versions) > 1 && !v.Deploying {
		v.OK = false
	}
	v.Summary = summary(v)
	return v
}

func judgeHost(o Observation, now time.Time, deploying bool) HostVerdict {
	hv := HostVerdict{Host: o.Host}
	if o.AgentErr != nil {
		hv.Problems = append(hv.Problems, fmt.Sprintf("agent unreachable: %v", o.AgentErr))
	}
	held := false
	if st := o.Agent; st != nil {
		d := st.Definitions
		hv.Current, hv.Previous, hv.LastGood = version(d.Current), version(d.Previous), version(d.LastGood)
		services := currentInstances(st.Services, hv.Current)
		for _, s := range services {
			line := ServiceLine{Name: s.Name, Version: s.Version, Running: s.Running, Health: s.Health, LastExit: s.ExitCode, Restarts: s.RestartCount}
			if s.Running && s.StartedAt != nil {
				line.Uptime = now.Sub(*s.StartedAt).Round(time.Second).Seconds()
			}
			hv.Services = append(hv.Services, line)
		}
		l := st.Lease
		if l == nil {
			l = st.FleetLease
		}
		if l != nil {
			held = true
			hv.Lease = &LeaseLine{Holder: l.Holder, Expires: l.Expires, ExpiresIn: l.Expires.Sub(now).Round(time.Second).Seconds()}
		}
		if w := st.Watchdog; w != nil {
			hv.Watchdog = w.Enabled
			hv.Maintenance = w.Maintenance
		}
		if !held {
			for _, s := range services {
				switch {
				case !s.Running:
					hv.Problems = append(hv.Problems, fmt.Sprintf("%s is down", s.Name))
				case s.Health == agentapi.HealthUnhealthy:
					hv.Problems = append(hv.Problems, fmt.Sprintf("%s is unhealthy", s.Name))
				}
			}
			if d.Current == nil {
				hv.Problems = append(hv.Problems, "nothing published")
			}
		}
	}
	switch {
	case o.TargetErr != nil:
		hv.Problems = append(hv.Problems, fmt.Sprintf("load balancer unreadable: %v", o.TargetErr))
	case o.Target != nil:
		t := *o.Target
		hv.LB = &TargetLine{State: t.State.String(), Reason: string(t.Reason), InRotation: t.InRotation, InFlight: t.InFlight}
		if !held && !deploying && !(t.State == lbport.StateHealthy && t.InRotation) {
			hv.Problems = append(hv.Problems, fmt.Sprintf("out of rotation at the load balancer (%s)", describeTarget(t)))
		}
	}
	return hv
}

// currentInstances keeps one instance per service name: the agent reports
// every instance it knows (a stopped one of the previous version beside the
// running one of the current). A running instance wins, then one of the
// current version, then the latest in the agent's order.
func currentInstances(all []agentapi.ServiceStatus, current string) []agentapi.ServiceStatus {
	var out []agentapi.ServiceStatus
	idx := map[string]int{}
	for _, s := range all {
		i, seen := idx[s.Name]
		if !seen {
			idx[s.Name] = len(out)
			out = append(out, s)
			continue
		}
		have := out[i]
		better := (s.Running && !have.Running) ||
			(s.Running == have.Running && s.Version == current && have.Version != current)
		if better {
			out[i] = s
		}
	}
	return out
}

func describeTarget(t lbport.Target) string {
	if t.Reason != "" {
		return t.State.String() + " " + string(t.Reason)
	}
	return t.State.String()
}

func version(r *agentapi.DefinitionRef) string {
	if r == nil {
		return ""
	}
	return r.Version
}

func summary(v Verdict) string {
	n := len(v.Hosts)
	var bad []string
	for _, h := range v.Hosts {
		if len(h.Problems) > 0 {
			bad = append(bad, h.Host)
		}
	}
	switch {
	case v.OK && v.Deploying:
		return fmt.Sprintf("a deploy is in progress: %d hosts on %s", n, strings.Join(v.Versions, ", "))
	case v.OK:
		return fmt.Sprintf("healthy: %d of %d hosts on %s, in rotation", n, n, strings.Join(v.Versions, ", "))
	case len(bad) == 0:
		return fmt.Sprintf("degraded: hosts run different versions (%s) and no deploy is in progress", strings.Join(v.Versions, ", "))
	default:
		return fmt.Sprintf("degraded: %d of %d hosts need attention (%s)", len(bad), n, strings.Join(bad, ", "))
	}
}

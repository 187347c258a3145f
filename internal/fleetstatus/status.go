// Package fleetstatus answers "what is the fleet doing right now?" for
// `mythex status`: one round of calls, in parallel, to every host's agent and
// to the load balancer, then a pure judgement of what was seen — which host
// runs which version, what the load balancer thinks of it, who holds a lease,
// and whether anything is degraded.
package fleetstatus

import (
	"context"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/lbport"
)

// Agent is what status needs of a host agent; *agentapi.Client implements it.
type Agent interface {
	Status(ctx context.Context) (agentapi.Status, error)
}

// Host is one host to look at.
type Host struct {
	// Name is the host's name (its target id in the load balancer).
	Name string
	// Target is what the load balancer routes to.
	Target lbport.TargetRef
	// Agent reaches its agent; nil when it could not be connected (AgentErr).
	Agent Agent
	// AgentErr is why no agent client could be made (SSH refused, …).
	AgentErr error
}

// Observation is what one round saw of one host.
type Observation struct {
	Host string
	// Agent is the agent's status; AgentErr is why it is missing.
	Agent    *agentapi.Status
	AgentErr error
	// Target is the load balancer's view; TargetErr is why it is missing.
	Target    *lbport.Target
	TargetErr error
}

// Collect makes one round of calls: every agent's status in parallel with
// one Describe of every target at the load balancer (lb may be nil), each
// bounded by timeout. It never fails as a whole: what could not be read is
// an error in its Observation.
func Collect(ctx context.Context, hosts []Host, lb lbport.Driver, timeout time.Duration) []Observation {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	obs := make([]Observation, len(hosts))
	done := make(chan struct{}, len(hosts)+1)
	for i, h := range hosts {
		obs[i].Host = h.Name
		go func() {
			defer func() { done <- struct{}{} }()
			if h.Agent == nil {
				obs[i].AgentErr = h.AgentErr
				return
			}
			st, err := h.Agent.Status(ctx)
			if err != nil {
				obs[i].AgentErr = err
				return
			}
			obs[i].Agent = &st
		}()
	}
	var targets []lbport.Target
	var lbErr error
	go func() {
		defer func() { done <- struct{}{} }()
		if lb == nil {
			return
		}
		refs := make([]lbport.TargetRef, len(hosts))
		for i, h := range hosts {
			refs[i] = h.Target
		}
		targets, lbErr = lb.Describe(ctx, refs...)
	}()
	for range len(hosts) + 1 {
		<-done
	}
	for i := range obs {
		switch {
		case lb == nil:
		case lbErr != nil:
			obs[i].TargetErr = lbErr
		case i < len(targets):
			t := targets[i]
			obs[i].Target = &t
		}
	}
	return obs
}

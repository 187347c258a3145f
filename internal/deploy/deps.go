// Package deploy rolls a new version across a fleet, one host (or batch) at a
// time, with a drain handshake: a host's services are stopped only after the
// load balancer reports its target out of rotation with no request in flight —
// provably stopped, not probably (DESIGN §3). Every listed service is verified
// on every host, via its agent and through the load balancer, before the deploy
// may succeed; a host that fails any step is rolled back to its previous
// definition, which is restored, never deleted.
package deploy

import (
	"context"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
)

// Agent is what the deploy needs of a host agent; *agentapi.Client implements
// it over HTTP.
type Agent interface {
	Status(ctx context.Context) (agentapi.Status, error)
	AcquireLease(ctx context.Context, fleet bool, holder string, ttl time.Duration) (agentapi.Lease, error)
	RenewLease(ctx context.Context, fleet bool, id string, ttl time.Duration) (agentapi.Lease, error)
	ReleaseLease(ctx context.Context, fleet bool, id string) error
	Publish(ctx context.Context, lease string, def []byte) (agentapi.PublishReport, error)
	Drain(ctx context.Context, lease string, services []string) error
	Stop(ctx context.Context, lease string) (agentapi.StopReport, error)
	Start(ctx context.Context, lease string) (agentapi.StartReport, error)
	Verify(ctx context.Context, services []string, version string) (agentapi.VerifyReport, error)
	Rollback(ctx context.Context, lease string) (agentapi.StartReport, error)
	MarkGood(ctx context.Context, lease string) error
}

var _ Agent = (*agentapi.Client)(nil)

// TargetView is what the load balancer reports of one target.
type TargetView struct {
	// Registered is false when the LB no longer knows the target (deregistered
	// and done draining).
	Registered bool
	// State is the ALB target state: initial, healthy, unhealthy, draining, unused.
	State string
	// InRotation says whether the LB may route a new request to it now.
	InRotation bool
	// InFlight is the number of requests to it not yet answered.
	InFlight int
	// Reason is the LB's reason code for the state.
	Reason string
	// Checks says how far the target is on its way back, e.g. "1/2 checks
	// passed"; "" when the LB does not say.
	Checks string
}

// LB is what the deploy needs of the load balancer's admin API.
type LB interface {
	// Target reports one target; Registered false (and no error) when unknown.
	Target(ctx context.Context, id string) (TargetView, error)
	// Register adds the target (state initial) or re-registers a draining one.
	Register(ctx context.Context, id, address string) error
	// Deregister starts draining the target.
	Deregister(ctx context.Context, id string) error
}

// Sighting is what one request through the load balancer reached.
type Sighting struct {
	Host, Version string
}

// Front sends one request through the load balancer's listener and says which
// host and version answered it; an error when none did.
type Front interface {
	Get(ctx context.Context) (Sighting, error)
}

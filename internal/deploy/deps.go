// Package deploy rolls a new version across a fleet, one host (or batch) at a
// time, with a drain handshake: a host's services are stopped only after the
// load balancer reports its target out of rotation with no request in flight —
// provably stopped, not probably (the overlap relation of docs/check.md). Every listed service is verified
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

// Sighting is what one request through the load balancer reached.
type Sighting struct {
	Host, Version string
}

// Front sends one request through the load balancer's listener and says which
// host and version answered it; an error when none did.
type Front interface {
	Get(ctx context.Context) (Sighting, error)
}

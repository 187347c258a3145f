package publish

import (
	"context"
	"errors"
)

// Router is the part of a load balancer the gate drives: which machines
// receive traffic. With a router the gate publishes blue-green: the router
// keeps sending requests to the serving machines until the new release is
// judged live. The embedded LB's admin API (internal/lb) implements it through
// an adapter; ALB target groups have the same three operations
// (RegisterTargets, DeregisterTargets, DescribeTargetHealth).
type Router interface {
	// Register adds machine id, reachable at address (host:port), as a target.
	// address is empty for machines only the platform's own proxy reaches
	// (Fly): a router that needs one returns an error.
	// The router checks its health before routing to it. Registering a
	// registered target is not an error.
	Register(ctx context.Context, id, address string) error
	// Deregister starts removing target id: no new requests; in-flight ones
	// finish (the deregistration delay). Deregistering an unknown target is
	// not an error.
	Deregister(ctx context.Context, id string) error
	// Target reports target id's routing state. An unknown target gives
	// TargetState{} and a nil error.
	Target(ctx context.Context, id string) (TargetState, error)
}

// TargetState is a router's view of one target.
type TargetState struct {
	// Registered is false once the target is gone (or never was).
	Registered bool
	// Draining: deregistered, finishing what is in flight; registering it
	// again brings it back.
	Draining bool
	// InRotation: a new request may be routed to it now (the LB's own truth,
	// fail-open included).
	InRotation bool
	// InFlight is how many requests it is serving.
	InFlight int
}

// ErrRouter wraps router failures during a switch.
var ErrRouter = errors.New("router")

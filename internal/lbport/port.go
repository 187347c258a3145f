// Package lbport is the one port mythex has to a load balancer: the deploy's
// drain handshake, publish's blue-green switch and the agent's lease-expiry
// recovery all talk to a Driver, whatever the load balancer is.
//
// The vocabulary is an AWS ALB target group's (ELBv2 API, version
// 2015-12-01): a target is registered (state initial, then healthy or
// unhealthy), deregistered (state draining, then unused), and each state
// carries a reason code. Drivers for other load balancers (the embedded
// `mythex lb`, HAProxy's Runtime API) map their own states onto these, and
// document what they cannot report.
package lbport

import (
	"context"
	"time"
)

// TargetRef names one target in the load balancer.
type TargetRef struct {
	// ID is the target's id: the fleet host's name for the embedded LB and
	// HAProxy (the server name), an instance id or IP address for an ALB.
	ID string
	// Address is the host:port the load balancer routes to. Drivers that
	// address a target by ID and port (ALB) take the port from it.
	Address string
}

// Target is what the load balancer reports of one target.
type Target struct {
	// ID is the target's id, as in TargetRef.
	ID string
	// Address is the host:port the load balancer routes to; empty when the
	// load balancer does not say.
	Address string
	// State is the target's state.
	State State
	// Reason is the ALB reason code for State; ReasonNone when healthy.
	Reason Reason
	// Description explains Reason in the load balancer's words.
	Description string
	// InRotation says whether the load balancer may route a new request to
	// the target now, fail-open included, as far as the load balancer tells.
	// A real ALB does not tell: its driver derives it from State (healthy, or
	// any registered state while every target is unhealthy).
	InRotation bool
	// InFlight is the number of requests (HAProxy: sessions plus queue) routed
	// to the target and not yet answered; -1 when the load balancer does not
	// report it (ALB).
	InFlight int
	// Checks says how far a target initial or unhealthy is on its way to
	// healthy, e.g. "1/2 checks passed"; empty when the load balancer does
	// not say (ALB, HAProxy).
	Checks string
}

// Registered reports whether the target is registered: not unused.
// A draining target is deregistered but still known.
func (t Target) Registered() bool { return t.State != StateUnused }

// HealthCheck is a target group's active health check.
type HealthCheck struct {
	// Path is the HTTP path checked.
	Path string
	// Interval is the time between two checks of one target (ALB
	// HealthCheckIntervalSeconds; HAProxy inter).
	Interval time.Duration
	// Timeout is how long one check may take (ALB HealthCheckTimeoutSeconds;
	// HAProxy timeout check).
	Timeout time.Duration
	// HealthyThreshold is the consecutive passes that make a target healthy
	// (ALB HealthyThresholdCount; HAProxy rise).
	HealthyThreshold int
	// UnhealthyThreshold is the consecutive failures that make a target
	// unhealthy (ALB UnhealthyThresholdCount; HAProxy fall).
	UnhealthyThreshold int
}

// Settings are the target group's settings mythex proves with `check` and
// applies with `lb apply`.
type Settings struct {
	// HealthCheck is the active health check.
	HealthCheck HealthCheck
	// DeregistrationDelay is how long a deregistered target may finish its
	// in-flight requests (ALB deregistration_delay.timeout_seconds). HAProxy
	// has none: the deployer enforces it.
	DeregistrationDelay time.Duration
	// Algorithm is round_robin or least_outstanding_requests (ALB
	// load_balancing.algorithm.type); empty when unknown.
	Algorithm string
	// SlowStart is the ALB slow_start.duration_seconds; 0 is off.
	SlowStart time.Duration
}

// Driver drives one load balancer's target group. Implementations are safe
// for concurrent use and retry nothing themselves beyond what their SDK does:
// callers decide about retries, using IsTransient.
type Driver interface {
	// Kind is the load balancer kind, as in mythex.yml load_balancer.kind:
	// embedded, alb or haproxy.
	Kind() string
	// Register puts the target into the target group (state initial; a
	// draining target registered again becomes initial too).
	Register(ctx context.Context, t TargetRef) error
	// Deregister takes the target out of the target group (state draining,
	// then unused). An unknown target is not an error, as in ELBv2.
	Deregister(ctx context.Context, t TargetRef) error
	// Describe reports the given targets in one call where the load balancer
	// allows it, in the order given. An unknown target is reported as
	// StateUnused with ReasonNotRegistered, not as an error.
	Describe(ctx context.Context, ts ...TargetRef) ([]Target, error)
	// Settings reads the target group's live settings. ErrUnsupported when
	// the load balancer cannot tell.
	Settings(ctx context.Context) (Settings, error)
	// Apply sets the target group's settings. ErrUnsupported when the load
	// balancer cannot be changed through its API (HAProxy's live settings).
	Apply(ctx context.Context, s Settings) error
}

// Describe1 reports one target through d.
func Describe1(ctx context.Context, d Driver, t TargetRef) (Target, error) {
	ts, err := d.Describe(ctx, t)
	if err != nil {
		return Target{}, err
	}
	if len(ts) != 1 {
		return Target{}, &UnexpectedError{Op: "describe " + t.ID, Detail: "the load balancer answered for a different number of targets"}
	}
	return ts[0], nil
}

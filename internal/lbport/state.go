package lbport

import (
	"fmt"
	"strconv"
)

// State is a target's state, named as an AWS ALB's TargetHealth.State.
type State uint8

// Target states, in ALB's terms. The zero value is StateUnused so a zero
// Target reads as unknown to the load balancer.
const (
	// StateUnused: not registered (never, or deregistration completed).
	StateUnused State = iota
	// StateInitial: registered, the first health checks are running.
	StateInitial
	// StateHealthy: passed the health checks; in rotation.
	StateHealthy
	// StateUnhealthy: failed unhealthy-threshold consecutive checks; out of
	// rotation unless the target group fails open.
	StateUnhealthy
	// StateDraining: deregistered; no new requests, in-flight requests may
	// finish until the deregistration delay passes.
	StateDraining
	// StateUnavailable: the load balancer cannot check the target (ALB:
	// health checks disabled for the target group).
	StateUnavailable
)

var stateNames = [...]string{"unused", "initial", "healthy", "unhealthy", "draining", "unavailable"}

// String returns the ALB name of s.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText encodes s as its ALB name.
func (s State) MarshalText() ([]byte, error) {
	if int(s) >= len(stateNames) {
		return nil, fmt.Errorf("lbport: unknown target state %d", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText decodes an ALB state name; an unknown name is an error.
func (s *State) UnmarshalText(b []byte) error {
	st, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// ParseState decodes an ALB state name (initial, healthy, unhealthy,
// draining, unused, unavailable).
func ParseState(name string) (State, error) {
	for i, n := range stateNames {
		if n == name {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("lbport: unknown target state %q (want one of initial, healthy, unhealthy, draining, unused, unavailable)", name)
}

// Reason is an ALB TargetHealth reason code. Codes starting with Elb
// originate in the load balancer, codes starting with Target in the target.
type Reason string

// Reason codes, as documented for the ALB TargetHealth API type.
const (
	// ReasonNone: the target is healthy.
	ReasonNone Reason = ""
	// ReasonRegistrationInProgress: initial, no health check has finished yet.
	ReasonRegistrationInProgress Reason = "Elb.RegistrationInProgress"
	// ReasonInitialHealthChecking: initial, checks are running.
	ReasonInitialHealthChecking Reason = "Elb.InitialHealthChecking"
	// ReasonInternalError: the check could not be run (the load balancer's
	// fault, not the target's).
	ReasonInternalError Reason = "Elb.InternalError"
	// ReasonResponseCodeMismatch: the check answered with an unexpected code.
	ReasonResponseCodeMismatch Reason = "Target.ResponseCodeMismatch"
	// ReasonTimeout: the check did not answer within the timeout.
	ReasonTimeout Reason = "Target.Timeout"
	// ReasonFailedHealthChecks: the connection failed or the answer was
	// malformed.
	ReasonFailedHealthChecks Reason = "Target.FailedHealthChecks"
	// ReasonDeregistrationInProgress: draining.
	ReasonDeregistrationInProgress Reason = "Target.DeregistrationInProgress"
	// ReasonNotRegistered: unused; the target is not registered.
	ReasonNotRegistered Reason = "Target.NotRegistered"
	// ReasonNotInUse: unused; the target group is not used by any load
	// balancer, or the target is in an Availability Zone the LB does not serve.
	ReasonNotInUse Reason = "Target.NotInUse"
	// ReasonInvalidState: unused; the target is stopped or terminated.
	ReasonInvalidState Reason = "Target.InvalidState"
	// ReasonHealthCheckDisabled: unavailable; health checks are disabled.
	ReasonHealthCheckDisabled Reason = "Target.HealthCheckDisabled"
)

package lb

import (
	"fmt"
	"strconv"

	"github.com/mythex/mythex/internal/lbport"
)

// State is a target's state in the target group, named as an AWS ALB's
// TargetHealth.State. Only initial, healthy and unhealthy targets are
// registered; draining targets are deregistered but still finishing in-flight
// requests; unused targets are gone.
type State uint8

// Target states, in ALB's terms.
const (
	// StateInitial: registered, the first health checks are running. An initial
	// target gets requests only while the group fails open.
	StateInitial State = iota
	// StateHealthy: passed the checks; in rotation.
	StateHealthy
	// StateUnhealthy: failed unhealthy-threshold consecutive checks; out of
	// rotation unless the group fails open.
	StateUnhealthy
	// StateDraining: deregistered; no new requests, in-flight requests may run
	// until they finish or the deregistration delay passes.
	StateDraining
	// StateUnused: not registered (deregistration completed).
	StateUnused
)

var stateNames = [...]string{"initial", "healthy", "unhealthy", "draining", "unused"}

// String returns the ALB name of s: initial, healthy, unhealthy, draining or
// unused.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Port is s in lbport's terms, the one vocabulary of every load balancer
// driver.
func (s State) Port() lbport.State {
	switch s {
	case StateInitial:
		return lbport.StateInitial
	case StateHealthy:
		return lbport.StateHealthy
	case StateUnhealthy:
		return lbport.StateUnhealthy
	case StateDraining:
		return lbport.StateDraining
	}
	return lbport.StateUnused
}

// MarshalText encodes s as its ALB name.
func (s State) MarshalText() ([]byte, error) {
	if int(s) >= len(stateNames) {
		return nil, fmt.Errorf("lb: unknown target state %d", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText decodes an ALB state name; an unknown name is an error.
func (s *State) UnmarshalText(b []byte) error {
	for i, n := range stateNames {
		if n == string(b) {
			*s = State(i)
			return nil
		}
	}
	return fmt.Errorf("lb: unknown target state %q", b)
}

// Reason is an ALB TargetHealth reason code: the one list of them, the load
// balancer port's (lbport.Reason). A healthy target has no reason.
type Reason = lbport.Reason

// Reason codes the embedded load balancer gives, as documented for the ALB
// TargetHealth API type (see lbport for each one's meaning).
const (
	ReasonNone                     = lbport.ReasonNone
	ReasonRegistrationInProgress   = lbport.ReasonRegistrationInProgress
	ReasonInitialHealthChecking    = lbport.ReasonInitialHealthChecking
	ReasonInternalError            = lbport.ReasonInternalError
	ReasonResponseCodeMismatch     = lbport.ReasonResponseCodeMismatch
	ReasonTimeout                  = lbport.ReasonTimeout
	ReasonFailedHealthChecks       = lbport.ReasonFailedHealthChecks
	ReasonDeregistrationInProgress = lbport.ReasonDeregistrationInProgress
	ReasonNotRegistered            = lbport.ReasonNotRegistered
)

// Thresholds are a target group's health check thresholds.
type Thresholds struct {
	// Healthy is the consecutive passed checks that bring an unhealthy target
	// back into service (ALB HealthyThresholdCount; default 5, range 2–10). A
	// newly registered target needs only one, as in an ALB.
	Healthy int
	// Unhealthy is the consecutive failed checks that take a target out of
	// service (ALB UnhealthyThresholdCount; default 2, range 2–10).
	Unhealthy int
}

// Health is a target's health: its state, the reason for it and the
// consecutive check counts that drive the next transition. The zero value is
// not meaningful; start from NewHealth.
type Health struct {
	// State is the target's state.
	State State
	// Reason is the ALB reason code; empty when healthy.
	Reason Reason
	// Description explains Reason in ALB's words, with the failing code for
	// Target.ResponseCodeMismatch.
	Description string
	// Passes is the number of consecutive passed checks.
	Passes int
	// Failures is the number of consecutive failed checks.
	Failures int
}

// NewHealth is the health of a target just registered: initial,
// Elb.RegistrationInProgress, no checks counted.
func NewHealth() Health {
	return Health{State: StateInitial, Reason: ReasonRegistrationInProgress, Description: describe(ReasonRegistrationInProgress, 0)}
}

// EventKind says what happened to a target.
type EventKind uint8

// Events that move a target between states.
const (
	// EventCheck: a health check finished; Event.Check holds its result.
	EventCheck EventKind = iota
	// EventRegister: the target was registered (again).
	EventRegister
	// EventDeregister: the target was deregistered.
	EventDeregister
	// EventDrained: a draining target has no more in-flight requests, or its
	// deregistration delay passed.
	EventDrained
)

// Event is one input of the state machine.
type Event struct {
	// Kind is what happened.
	Kind EventKind
	// Check is the result of the health check, for EventCheck.
	Check CheckResult
}

// Next is the target state machine: every transition of a target is decided
// here, from its current health, one event and the group's thresholds, as an
// ALB target group does it:
//
//   - initial → healthy after one passed check ("after your target is
//     registered, it must pass one health check to be considered healthy");
//   - initial → unhealthy, healthy → unhealthy after th.Unhealthy consecutive
//     failed checks;
//   - unhealthy → healthy after th.Healthy consecutive passed checks;
//   - registered → draining on deregistration, draining → unused when drained;
//   - draining or unused → initial when registered again.
//
// Checks are ignored while draining or unused. changed reports whether the
// state or the reason changed (consecutive counts changing alone is not a
// change); callers notify only then. Next is pure.
func Next(h Health, ev Event, th Thresholds) (next Health, changed bool) {
	next = h
	switch ev.Kind {
	case EventRegister:
		if h.State == StateDraining || h.State == StateUnused {
			next = NewHealth()
		}
	case EventDeregister:
		if h.State == StateInitial || h.State == StateHealthy || h.State == StateUnhealthy {
			next = Health{State: StateDraining, Reason: ReasonDeregistrationInProgress,
				Description: describe(ReasonDeregistrationInProgress, 0)}
		}
	case EventDrained:
		if h.State == StateDraining {
			next = Health{State: StateUnused, Reason: ReasonNotRegistered, Description: describe(ReasonNotRegistered, 0)}
		}
	case EventCheck:
		next = nextOnCheck(h, ev.Check, th)
	}
	return next, next.State != h.State || next.Reason != h.Reason
}

func nextOnCheck(h Health, r CheckResult, th Thresholds) Health {
	if h.State != StateInitial && h.State != StateHealthy && h.State != StateUnhealthy {
		return h
	}
	if r.Passed() {
		h.Passes++
		h.Failures = 0
	} else {
		h.Failures++
		h.Passes = 0
	}
	failed := func() Health {
		reason := r.Reason()
		h.State, h.Reason, h.Description = StateUnhealthy, reason, describe(reason, r.Status)
		return h
	}
	switch h.State {
	case StateInitial:
		switch {
		case r.Passed():
			h.State, h.Reason, h.Description = StateHealthy, ReasonNone, ""
		case h.Failures >= th.Unhealthy:
			return failed()
		default:
			h.Reason, h.Description = ReasonInitialHealthChecking, describe(ReasonInitialHealthChecking, 0)
		}
	case StateHealthy:
		if !r.Passed() && h.Failures >= th.Unhealthy {
			return failed()
		}
	case StateUnhealthy:
		switch {
		case r.Passed() && h.Passes >= th.Healthy:
			h.State, h.Reason, h.Description = StateHealthy, ReasonNone, ""
		case !r.Passed():
			return failed() // the reason follows the latest failure
		}
	}
	return h
}

// describe gives the ALB console description of a reason code.
func describe(r Reason, status int) string {
	switch r {
	case ReasonRegistrationInProgress:
		return "Target registration is in progress"
	case ReasonInitialHealthChecking:
		return "Initial health checks in progress"
	case ReasonInternalError:
		return "Health checks failed due to an internal error"
	case ReasonResponseCodeMismatch:
		return "Health checks failed with these codes: [" + strconv.Itoa(status) + "]"
	case ReasonTimeout:
		return "Request timed out"
	case ReasonFailedHealthChecks:
		return "Health checks failed"
	case ReasonDeregistrationInProgress:
		return "Target deregistration is in progress"
	case ReasonNotRegistered:
		return "Target is not registered to the target group"
	}
	return ""
}

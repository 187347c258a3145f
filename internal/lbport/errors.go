package lbport

import (
	"context"
	"errors"
	"fmt"
)

// Errors a Driver returns (wrapped); match them with errors.Is.
var (
	// ErrUnauthorized: the load balancer refused the credentials (embedded:
	// token; ALB: InvalidClientTokenId, SignatureDoesNotMatch, AccessDenied;
	// HAProxy: the stats socket is not at level admin).
	ErrUnauthorized = errors.New("load balancer refused the credentials")
	// ErrTargetGroupNotFound: the target group (ALB ARN, HAProxy backend)
	// does not exist.
	ErrTargetGroupNotFound = errors.New("target group not found")
	// ErrInvalidTarget: the load balancer refused the target itself (ALB
	// InvalidTarget on register, HAProxy unknown server).
	ErrInvalidTarget = errors.New("invalid target")
	// ErrThrottled: the load balancer's API is rate limiting (ALB
	// ThrottlingException); retry later, never a reason to fail a deploy by
	// itself.
	ErrThrottled = errors.New("load balancer API throttled")
	// ErrUnsupported: the load balancer cannot do this through its API.
	ErrUnsupported = errors.New("not supported by this load balancer")
	// ErrInvalidSettings: the load balancer refused target group settings
	// given to Apply (a timeout not under the interval, a threshold out of
	// range); nothing changed.
	ErrInvalidSettings = errors.New("load balancer refused the settings")
)

// UnexpectedError is an answer a driver could not make sense of.
type UnexpectedError struct {
	// Op is what was asked, e.g. "describe web-1".
	Op string
	// Detail says what was wrong with the answer.
	Detail string
}

// Error formats the failure.
func (e *UnexpectedError) Error() string {
	return fmt.Sprintf("load balancer: %s: %s", e.Op, e.Detail)
}

// transient is implemented by driver errors that know whether a retry may
// succeed.
type transient interface{ Transient() bool }

// IsTransient reports whether err may go away when the call is retried: a
// throttled API, a refused or reset connection, a timeout, or an error that
// says so through a Transient() bool method. Refused credentials, unknown
// target groups and invalid targets are not transient.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrTargetGroupNotFound) ||
		errors.Is(err, ErrInvalidTarget) || errors.Is(err, ErrUnsupported) || errors.Is(err, ErrInvalidSettings) {
		return false
	}
	if errors.Is(err, ErrThrottled) {
		return true
	}
	var t transient
	if errors.As(err, &t) {
		return t.Transient()
	}
	var ue *UnexpectedError
	if errors.As(err, &ue) {
		return false
	}
	// Network errors (refused, reset, timeout) and anything else unknown:
	// retry within the caller's bound.
	return true
}

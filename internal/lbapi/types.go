// Package lbapi is the wire of the embedded load balancer's admin API
// (`mythex lb`, docs/lb.md): the JSON bodies and a client. The server lives in
// internal/lb; callers that drive a load balancer go through
// internal/lbport/embedded rather than this client directly.
package lbapi

import (
	"time"

	"github.com/mythex/mythex/internal/lbport"
)

// RegisterRequest is the body of POST /v1/targets.
type RegisterRequest struct {
	// ID is the target's id (the fleet host's name).
	ID string `json:"id"`
	// Address is the target's host:port.
	Address string `json:"address"`
}

// TargetList is the body of GET /v1/targets.
type TargetList struct {
	// Targets are every registered or draining target, in registration order.
	Targets []TargetStatus `json:"targets"`
}

// TargetStatus is what the admin API reports about one target.
type TargetStatus struct {
	// ID is the target's id (fleet host name).
	ID string `json:"id"`
	// Address is the target's host:port.
	Address string `json:"address"`
	// State is initial, healthy, unhealthy, draining or unused.
	State lbport.State `json:"state"`
	// Reason is the ALB reason code; empty when healthy.
	Reason lbport.Reason `json:"reason"`
	// Description explains Reason.
	Description string `json:"description"`
	// InRotation is the LB's own truth: whether a new request may be routed to
	// the target now. It accounts for fail-open.
	InRotation bool `json:"in_rotation"`
	// InFlight is the number of requests routed to the target and not yet
	// answered.
	InFlight int64 `json:"in_flight"`
	// LastChecks are the most recent health checks, newest first (at most 5).
	LastChecks []CheckStatus `json:"last_checks"`
}

// CheckStatus is one health check as the admin API reports it.
type CheckStatus struct {
	// At is when the check started (RFC 3339 with nanoseconds in JSON).
	At time.Time `json:"at"`
	// OK is whether it passed.
	OK bool `json:"ok"`
	// Status is the HTTP status answered; 0 when none.
	Status int `json:"status"`
	// DurationSeconds is how long it took, in seconds.
	DurationSeconds float64 `json:"duration_seconds"`
	// Error says why it failed; empty when it passed.
	Error string `json:"error"`
}

// ErrorBody is the body of every error answer: {"error": "..."}.
type ErrorBody struct {
	// Error says what went wrong.
	Error string `json:"error"`
}

// Settings is the body of GET /v1/settings and PUT /v1/settings: the target
// group's settings an ALB changes with ModifyTargetGroup and
// ModifyTargetGroupAttributes. A PUT sets every field (none may be left out);
// the listener's settings (idle and connect timeouts, body limit) are fixed
// at start and not here.
type Settings struct {
	// HealthCheckPath is the path checked with GET, e.g. /healthz.
	HealthCheckPath string `json:"health_check_path"`
	// HealthCheckIntervalSeconds is the time between two checks of one
	// target, in seconds.
	HealthCheckIntervalSeconds float64 `json:"health_check_interval_seconds"`
	// HealthCheckTimeoutSeconds bounds one check, in seconds; less than the
	// interval.
	HealthCheckTimeoutSeconds float64 `json:"health_check_timeout_seconds"`
	// HealthyThreshold is the consecutive passed checks that make a target
	// healthy.
	HealthyThreshold int `json:"healthy_threshold"`
	// UnhealthyThreshold is the consecutive failed checks that make a target
	// unhealthy.
	UnhealthyThreshold int `json:"unhealthy_threshold"`
	// DeregistrationDelaySeconds is how long a draining target may finish
	// its requests in flight, in seconds.
	DeregistrationDelaySeconds float64 `json:"deregistration_delay_seconds"`
	// Algorithm is round_robin or least_outstanding_requests.
	Algorithm string `json:"algorithm"`
}

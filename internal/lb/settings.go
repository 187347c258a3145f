package lb

import (
	"errors"
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// Defaults that mythex.yml does not set.
const (
	// DefaultConnectTimeout bounds connecting to a target; an ALB gives up after
	// 10s and answers 504.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultMaxBodySize bounds request and response bodies, which the proxy
	// buffers (see docs/lb.md): 32 MiB.
	DefaultMaxBodySize = 32 << 20
)

// Settings are a target group's and listener's settings, in ALB terms. Build
// them from mythex.yml with SettingsFromFleet; Validate checks them.
type Settings struct {
	// HealthCheckPath is the path checked with GET (ALB HealthCheckPath).
	HealthCheckPath string
	// HealthCheckInterval is the time between two checks of one target (ALB
	// HealthCheckIntervalSeconds).
	HealthCheckInterval time.Duration
	// HealthCheckTimeout bounds one check; it must be less than the interval
	// (ALB HealthCheckTimeoutSeconds).
	HealthCheckTimeout time.Duration
	// Thresholds are the healthy and unhealthy thresholds.
	Thresholds Thresholds
	// DeregistrationDelay is how long a draining target may finish in-flight
	// requests before they are cut off.
	DeregistrationDelay time.Duration
	// IdleTimeout closes idle client and backend connections, and bounds how
	// long a target may take to answer before the LB answers 504 (ALB idle
	// timeout).
	IdleTimeout time.Duration
	// ConnectTimeout bounds connecting to a target. Default 10s.
	ConnectTimeout time.Duration
	// Algorithm is round robin or least outstanding requests.
	Algorithm Algorithm
	// MaxBodySize bounds request and response bodies, in bytes. Default 32 MiB.
	MaxBodySize int
}

// SettingsFromFleet takes the settings of the load_balancer section of
// mythex.yml (already defaulted by fleet.Load) and fills the rest with
// defaults. Errors are *fleet.FieldError (matching fleet.ErrInvalid).
func SettingsFromFleet(c fleet.LoadBalancer) (Settings, error) {
	algo, err := ParseAlgorithm(c.Algorithm)
	if err != nil {
		return Settings{}, &fleet.FieldError{Field: "load_balancer.algorithm", Msg: err.Error()}
	}
	s := Settings{
		HealthCheckPath:     c.HealthCheck.Path,
		HealthCheckInterval: c.HealthCheck.Interval,
		HealthCheckTimeout:  c.HealthCheck.Timeout,
		Thresholds:          Thresholds{Healthy: c.HealthCheck.HealthyThreshold, Unhealthy: c.HealthCheck.UnhealthyThreshold},
		DeregistrationDelay: c.DeregistrationDelay,
		IdleTimeout:         c.IdleTimeout,
		ConnectTimeout:      DefaultConnectTimeout,
		Algorithm:           algo,
		MaxBodySize:         DefaultMaxBodySize,
	}
	return s, s.Validate()
}

// Validate checks s: positive durations and thresholds, an absolute health
// check path, and a health check timeout shorter than the interval (an ALB
// refuses otherwise). It returns every problem joined, each a
// *fleet.FieldError naming the mythex.yml field.
func (s Settings) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &fleet.FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if s.HealthCheckPath == "" || s.HealthCheckPath[0] != '/' {
		bad("load_balancer.health_check.path", "must be an absolute path like /healthz, got %q", s.HealthCheckPath)
	}
	if s.HealthCheckInterval <= 0 {
		bad("load_balancer.health_check.interval", "must be more than 0, got %v", s.HealthCheckInterval)
	}
	if s.HealthCheckTimeout <= 0 {
		bad("load_balancer.health_check.timeout", "must be more than 0, got %v", s.HealthCheckTimeout)
	} else if s.HealthCheckTimeout >= s.HealthCheckInterval {
		bad("load_balancer.health_check.timeout", "must be less than the interval (%v), got %v; an ALB refuses this too",
			s.HealthCheckInterval, s.HealthCheckTimeout)
	}
	if s.Thresholds.Healthy < 1 {
		bad("load_balancer.health_check.healthy_threshold", "must be at least 1, got %d", s.Thresholds.Healthy)
	}
	if s.Thresholds.Unhealthy < 1 {
		bad("load_balancer.health_check.unhealthy_threshold", "must be at least 1, got %d", s.Thresholds.Unhealthy)
	}
	if s.DeregistrationDelay < 0 {
		bad("load_balancer.deregistration_delay", "must be 0 or more, got %v", s.DeregistrationDelay)
	}
	if s.IdleTimeout <= 0 {
		bad("load_balancer.idle_timeout", "must be more than 0, got %v", s.IdleTimeout)
	}
	if s.ConnectTimeout <= 0 {
		bad("connect timeout", "must be more than 0, got %v", s.ConnectTimeout)
	}
	if s.MaxBodySize <= 0 {
		bad("max body size", "must be more than 0 bytes, got %d", s.MaxBodySize)
	}
	return errors.Join(errs...)
}

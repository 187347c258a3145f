package lb

import (
	"context"
	"fmt"
	"net"
)

// StartTarget is a target the load balancer registers at start.
type StartTarget struct {
	// ID is the target's id (hosts[].name).
	ID string
	// Address is host:port (hosts[].target).
	Address string
}

// ListenAndServe listens on listen (traffic, load_balancer.listen) and
// adminListen (admin API and ELBv2 endpoint, load_balancer.admin_listen),
// registers targets, logs the start, and serves until ctx ends (Serve).
// Errors name the address that could not be bound; a target that cannot be
// registered (a bad address) is a *RegisterError.
// On any error before serving, everything opened is closed.
func (s *Server) ListenAndServe(ctx context.Context, listen, adminListen string, targets []StartTarget) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		s.Group.Close()
		return fmt.Errorf("listen on %s (load_balancer.listen): %w", listen, err)
	}
	adminLn, err := net.Listen("tcp", adminListen)
	if err != nil {
		ln.Close()
		s.Group.Close()
		return fmt.Errorf("listen on %s (load_balancer.admin_listen): %w", adminListen, err)
	}
	st := s.Group.Settings()
	s.log.Info("mythex lb started", "listen", ln.Addr().String(), "admin", adminLn.Addr().String(),
		"targets", len(targets), "algorithm", st.Algorithm.String(),
		"health_check_interval", st.HealthCheckInterval, "healthy_threshold", st.Thresholds.Healthy,
		"unhealthy_threshold", st.Thresholds.Unhealthy, "deregistration_delay", st.DeregistrationDelay,
		"idle_timeout", st.IdleTimeout)
	if s.elbv2 != nil {
		s.log.Info("ELBv2 API endpoint on the admin listener", "endpoint", "http://"+adminLn.Addr().String()+"/",
			"region", s.elbv2.Region, "target_group_arn", s.TargetGroupARN, "throttle_calls_per_second", s.elbv2.Throttle)
	}
	for _, t := range targets {
		if _, err := s.Group.Register(t.ID, t.Address); err != nil {
			ln.Close()
			adminLn.Close()
			s.Group.Close()
			return &RegisterError{ID: t.ID, Err: err}
		}
	}
	err = s.Serve(ctx, ln, adminLn)
	s.log.Info("mythex lb stopped")
	return err
}

// RegisterError is a target ListenAndServe could not register at start: bad
// input in the fleet config.
type RegisterError struct {
	ID  string
	Err error
}

func (e *RegisterError) Error() string { return fmt.Sprintf("register host %s: %v", e.ID, e.Err) }

// Unwrap is the Register error.
func (e *RegisterError) Unwrap() error { return e.Err }

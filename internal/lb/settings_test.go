package lb

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

func TestSettingsFromFleet(t *testing.T) {
	c := fleet.Default().LoadBalancer
	s, err := SettingsFromFleet(c)
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{
		HealthCheckPath: "/healthz", HealthCheckInterval: 30 * time.Second, HealthCheckTimeout: 5 * time.Second,
		Thresholds: Thresholds{Healthy: 5, Unhealthy: 2}, DeregistrationDelay: 300 * time.Second, IdleTimeout: 60 * time.Second,
		ConnectTimeout: DefaultConnectTimeout, Algorithm: RoundRobin, MaxBodySize: DefaultMaxBodySize,
	}
	if s != want {
		t.Fatalf("settings from the fleet defaults:\n got %+v\nwant %+v (ALB defaults)", s, want)
	}
	c.Algorithm = fleet.AlgorithmLeastOutstandingRequests
	if s, err := SettingsFromFleet(c); err != nil || s.Algorithm != LeastOutstandingRequests {
		t.Fatalf("least_outstanding_requests: %v, %v", s.Algorithm, err)
	}
}

func TestSettings_Validate(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(*Settings)
		wantField string
	}{
		{"timeout not below interval", func(s *Settings) { s.HealthCheckTimeout = s.HealthCheckInterval }, "load_balancer.health_check.timeout"},
		{"relative path", func(s *Settings) { s.HealthCheckPath = "healthz" }, "load_balancer.health_check.path"},
		{"zero interval", func(s *Settings) { s.HealthCheckInterval = 0 }, "load_balancer.health_check.interval"},
		{"zero healthy threshold", func(s *Settings) { s.Thresholds.Healthy = 0 }, "load_balancer.health_check.healthy_threshold"},
		{"zero unhealthy threshold", func(s *Settings) { s.Thresholds.Unhealthy = 0 }, "load_balancer.health_check.unhealthy_threshold"},
		{"negative deregistration delay", func(s *Settings) { s.DeregistrationDelay = -time.Second }, "load_balancer.deregistration_delay"},
		{"zero idle timeout", func(s *Settings) { s.IdleTimeout = 0 }, "load_balancer.idle_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSettings()
			tt.mutate(&s)
			err := s.Validate()
			var fe *fleet.FieldError
			if !errors.Is(err, fleet.ErrInvalid) || !errors.As(err, &fe) || fe.Field != tt.wantField {
				t.Fatalf("Validate = %v, want a fleet.FieldError on %s", err, tt.wantField)
			}
		})
	}
	if err := testSettings().Validate(); err != nil {
		t.Fatalf("valid settings: %v", err)
	}
	s := testSettings()
	s.DeregistrationDelay = 0 // allowed: ALB range is 0–3600s
	if err := s.Validate(); err != nil {
		t.Fatalf("zero deregistration delay: %v", err)
	}
	s = testSettings()
	s.HealthCheckPath, s.IdleTimeout = "", 0
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "health_check.path") || !strings.Contains(err.Error(), "idle_timeout") {
		t.Fatalf("two problems: %v, want both named", err)
	}
}

package lb

import (
	"fmt"
	"math"
	"time"

	"github.com/mythex/mythex/internal/lbapi"
)

// Wire is s as the admin API reports it (GET /v1/settings).
func (s Settings) Wire() lbapi.Settings {
	return lbapi.Settings{
		HealthCheckPath:            s.HealthCheckPath,
		HealthCheckIntervalSeconds: s.HealthCheckInterval.Seconds(),
		HealthCheckTimeoutSeconds:  s.HealthCheckTimeout.Seconds(),
		HealthyThreshold:           s.Thresholds.Healthy,
		UnhealthyThreshold:         s.Thresholds.Unhealthy,
		DeregistrationDelaySeconds: s.DeregistrationDelay.Seconds(),
		Algorithm:                  s.Algorithm.String(),
	}
}

// maxWireSeconds bounds the durations PUT /v1/settings takes: a day.
const maxWireSeconds = 24 * 60 * 60

// withWire returns base with the fields of w (PUT /v1/settings) in place of
// its own; the listener's fields stay base's. Errors name the JSON field.
// Settings.Validate is the caller's.
func withWire(base Settings, w lbapi.Settings) (Settings, error) {
	dur := func(field string, secs float64) (time.Duration, error) {
		if math.IsNaN(secs) || secs < 0 || secs > maxWireSeconds {
			return 0, fmt.Errorf("%s must be from 0 to %d seconds, got %v", field, maxWireSeconds, secs)
		}
		return time.Duration(math.Round(secs * float64(time.Second))), nil
	}
	var err error
	s := base
	s.HealthCheckPath = w.HealthCheckPath
	if s.HealthCheckInterval, err = dur("health_check_interval_seconds", w.HealthCheckIntervalSeconds); err != nil {
		return base, err
	}
	if s.HealthCheckTimeout, err = dur("health_check_timeout_seconds", w.HealthCheckTimeoutSeconds); err != nil {
		return base, err
	}
	if s.DeregistrationDelay, err = dur("deregistration_delay_seconds", w.DeregistrationDelaySeconds); err != nil {
		return base, err
	}
	s.Thresholds = Thresholds{Healthy: w.HealthyThreshold, Unhealthy: w.UnhealthyThreshold}
	if s.Algorithm, err = ParseAlgorithm(w.Algorithm); err != nil {
		return base, fmt.Errorf("algorithm: %w", err)
	}
	return s, nil
}

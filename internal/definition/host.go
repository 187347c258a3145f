package definition

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/mythex/mythex/internal/fleet"
)

// ForHost resolves the fleet's compose file (deploy.compose, relative to
// mythex.yml) for the host named host and the release version: the host's
// vars (hosts[].vars) and target (hosts[].target, as MYTHEX_TARGET and
// MYTHEX_TARGET_PORT) reach interpolation. Errors are as for Resolve; an
// unset deploy.compose or an unknown host is a *FieldError naming mythex.yml.
func ForHost(ctx context.Context, fl *fleet.Loaded, host, version string) (*Definition, error) {
	if fl.Deploy.Compose == "" {
		return nil, &FieldError{File: fl.Path, Field: "deploy.compose", Msg: "is not set; set it to the compose file that defines the services, relative to mythex.yml (e.g. compose.yaml)"}
	}
	if h, ok := fl.Host(host); ok {
		return Resolve(ctx, Input{
			ComposeFile: filepath.Join(fl.Dir(), fl.Deploy.Compose),
			Version:     version,
			Host:        h.Name,
			Target:      h.Target,
			Vars:        h.Vars,
			Fleet:       FleetVars(&fl.Config),
		})
	}
	return nil, &FieldError{File: fl.Path, Field: "hosts", Msg: fmt.Sprintf("no host named %q; hosts are %v", host, fl.HostNames())}
}

// Interpolation variables mythex derives from mythex.yml (FleetVars).
const (
	// VarDrainServePeriod is drain.serve_period (D), a Go duration.
	VarDrainServePeriod = "MYTHEX_DRAIN_SERVE_PERIOD"
	// VarDrainShutdownTimeout is drain.shutdown_timeout (S).
	VarDrainShutdownTimeout = "MYTHEX_DRAIN_SHUTDOWN_TIMEOUT"
	// VarStopGracePeriod is backend.stop_grace_period (G).
	VarStopGracePeriod = "MYTHEX_STOP_GRACE_PERIOD"
	// VarKeepAliveIdleTimeout is backend.keepalive_idle_timeout.
	VarKeepAliveIdleTimeout = "MYTHEX_KEEPALIVE_IDLE_TIMEOUT"
	// VarHealthPath is load_balancer.health_check.path.
	VarHealthPath = "MYTHEX_HEALTH_PATH"
	// VarHealthInterval is load_balancer.health_check.interval: a compose
	// healthcheck's interval takes it so the agent's own checks (watchdog,
	// start) run at the pace `mythex check` proved, from one number.
	VarHealthInterval = "MYTHEX_HEALTH_INTERVAL"
	// VarHealthTimeout is load_balancer.health_check.timeout, for a compose
	// healthcheck's timeout.
	VarHealthTimeout = "MYTHEX_HEALTH_TIMEOUT"
)

// FleetVars are the interpolation variables mythex derives from c: the drain,
// grace and keep-alive numbers and the health check's path, interval and
// timeout, so a compose file uses
// the values `mythex check` proved (${MYTHEX_DRAIN_SERVE_PERIOD}) rather than
// copies that can drift from them. Durations are Go duration strings.
func FleetVars(c *fleet.Config) map[string]string {
	return map[string]string{
		VarDrainServePeriod:     c.Drain.ServePeriod.String(),
		VarDrainShutdownTimeout: c.Drain.ShutdownTimeout.String(),
		VarStopGracePeriod:      c.Backend.StopGracePeriod.String(),
		VarKeepAliveIdleTimeout: c.Backend.KeepAliveIdleTimeout.String(),
		VarHealthPath:           c.LoadBalancer.HealthCheck.Path,
		VarHealthInterval:       c.LoadBalancer.HealthCheck.Interval.String(),
		VarHealthTimeout:        c.LoadBalancer.HealthCheck.Timeout.String(),
	}
}

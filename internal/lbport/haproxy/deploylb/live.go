package deploylb

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/haproxy"
)

// Finding is one line of `mythex check --live` on a kind haproxy fleet.
type Finding struct {
	Name string `json:"name"`
	// Level is ok, warn (printed, exit 0) or fail (exit 1).
	Level  string `json:"level"`
	Detail string `json:"detail"`
}

// LiveReport is what `mythex check --live` found in a running HAProxy (its
// --json second document).
type LiveReport struct {
	// Live is load_balancer.runtime_api.
	Live     string    `json:"live"`
	Version  string    `json:"version,omitempty"`
	OK       bool      `json:"ok"`
	Findings []Finding `json:"findings"`
}

// liveTimeout bounds reading the Runtime API (and haproxy.cfg).
const liveTimeout = 10 * time.Second

// CheckLive reads the running HAProxy of the kind haproxy fleet l through its
// Runtime API (and haproxy.cfg at load_balancer.config_file, if set) and
// reports what the timing proof cannot see from mythex.yml alone: servers
// without a health check, and drift between the health check mythex.yml
// describes and the one HAProxy runs. It changes nothing. Errors are for a
// HAProxy that cannot be read (socket, level, backend, server), wrapping
// deploy.ErrPreflight.
func CheckLive(ctx context.Context, l *fleet.Loaded) (LiveReport, error) {
	d, err := NewDriver(l)
	if err != nil {
		return LiveReport{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, liveTimeout)
	defer cancel()
	rep, err := d.Preflight(ctx, l.HostNames())
	if err != nil {
		return LiveReport{}, fmt.Errorf("%w: %w", deploy.ErrPreflight, err)
	}
	s, err := d.Settings(ctx)
	if err != nil {
		return LiveReport{}, err
	}
	fs := Findings(l, rep, s)
	out := LiveReport{Live: l.LoadBalancer.RuntimeAPI, Version: rep.Version, OK: true, Findings: fs}
	for _, f := range fs {
		if f.Level == "fail" {
			out.OK = false
		}
	}
	return out, nil
}

// Findings decides what `mythex check --live` says of a kind haproxy fleet,
// from what HAProxy reported (rep: servers, their checks; s: the health check
// it runs) against the fleet config l: ok, warn or fail per relation.
func Findings(l *fleet.Loaded, rep haproxy.Report, s lbport.Settings) []Finding {
	var fs []Finding
	hc := l.LoadBalancer.HealthCheck
	var servers []string
	for _, h := range l.Hosts {
		servers = append(servers, h.ServerName())
	}
	fs = append(fs, Finding{"runtime-api", "ok", fmt.Sprintf("level admin; servers %s found", strings.Join(servers, ", "))})
	if len(rep.NoCheck) > 0 {
		f := Finding{Name: "no-check", Level: "warn", Detail: fmt.Sprintf(
			"%s: no health check (`check` missing on the server line): HAProxy never takes it out of rotation for a failing check, only the drain does", strings.Join(rep.NoCheck, ", "))}
		if l.Deploy.DrainMode == fleet.DrainModeHealth {
			f.Level = "fail"
			f.Detail = NoCheckError(l, rep.NoCheck).Error()
		}
		fs = append(fs, f)
	}
	drift := func(field, mine, theirs, keyword string) {
		if mine == theirs {
			fs = append(fs, Finding{field, "ok", fmt.Sprintf("%s matches HAProxy's %s", mine, keyword)})
			return
		}
		fs = append(fs, Finding{field, "fail", fmt.Sprintf(
			"load_balancer.health_check.%s is %s in mythex.yml but HAProxy runs %s %s: the timing above was proved for numbers HAProxy does not use; make them equal",
			field, mine, keyword, theirs)})
	}
	if s.HealthCheck.HealthyThreshold > 0 {
		drift("healthy_threshold", fmt.Sprint(hc.HealthyThreshold), fmt.Sprint(s.HealthCheck.HealthyThreshold), "rise")
		drift("unhealthy_threshold", fmt.Sprint(hc.UnhealthyThreshold), fmt.Sprint(s.HealthCheck.UnhealthyThreshold), "fall")
	}
	if s.HealthCheck.Interval > 0 {
		drift("interval", hc.Interval.String(), s.HealthCheck.Interval.String(), "inter")
		drift("timeout", hc.Timeout.String(), s.HealthCheck.Timeout.String(), "timeout check")
		if s.HealthCheck.Path != "" {
			drift("path", hc.Path, s.HealthCheck.Path, "option httpchk")
		}
	} else if l.LoadBalancer.ConfigFile == "" {
		fs = append(fs, Finding{"interval", "warn",
			"HAProxy's Runtime API does not expose inter and timeout check: set load_balancer.config_file to haproxy.cfg's path to compare them"})
	}
	return fs
}

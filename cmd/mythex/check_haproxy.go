package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/haproxy"
	"github.com/mythex/mythex/internal/lbport/haproxy/deploylb"
)

// liveFinding is one line of `mythex check --live`.
type liveFinding struct {
	Name string `json:"name"`
	// Level is ok, warn (printed, exit 0) or fail (exit 1).
	Level  string `json:"level"`
	Detail string `json:"detail"`
}

// liveReport is `mythex check --live --json`'s second document.
type liveReport struct {
	Live     string        `json:"live"`
	Version  string        `json:"version,omitempty"`
	OK       bool          `json:"ok"`
	Findings []liveFinding `json:"findings"`
}

// checkLive reads the running HAProxy of a kind haproxy fleet through its
// Runtime API (and haproxy.cfg at load_balancer.config_file, if set) and
// reports what the timing proof cannot see from mythex.yml alone: servers
// without a health check, and drift between the health check mythex.yml
// describes and the one HAProxy runs. It changes nothing. The error is for
// a HAProxy that cannot be read (socket, level, backend, server): exit 2.
func checkLive(ctx context.Context, w io.Writer, l *fleet.Loaded, asJSON bool) (ok bool, err error) {
	if l.LoadBalancer.Kind != fleet.KindHAProxy {
		return false, usagef("--live reads a running HAProxy: load_balancer.kind is %q, not haproxy", l.LoadBalancer.Kind)
	}
	d, err := deploylb.NewDriver(l)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ids := make([]string, 0, len(l.Hosts))
	for _, h := range l.Hosts {
		ids = append(ids, h.Name)
	}
	rep, err := d.Preflight(ctx, ids)
	if err != nil {
		return false, fmt.Errorf("%w: %w", deploy.ErrPreflight, err)
	}
	s, err := d.Settings(ctx)
	if err != nil {
		return false, err
	}
	fs := liveFindings(l, rep, s)
	out := liveReport{Live: l.LoadBalancer.RuntimeAPI, Version: rep.Version, OK: true, Findings: fs}
	for _, f := range fs {
		if f.Level == "fail" {
			out.OK = false
		}
	}
	if asJSON {
		b, _ := json.Marshal(out)
		_, err = fmt.Fprintf(w, "%s\n", b)
		return out.OK, err
	}
	fmt.Fprintf(w, "\nlive: HAProxy %s at %s, backend %s\n", rep.Version, l.LoadBalancer.RuntimeAPI, l.LoadBalancer.Backend)
	for _, f := range fs {
		m := map[string]string{"ok": "✓", "warn": "!", "fail": "✗"}[f.Level]
		fmt.Fprintf(w, "  %s %-14s %s\n", m, f.Name, f.Detail)
	}
	return out.OK, nil
}

// liveFindings decides what `check --live` says, from what HAProxy reported
// (rep, s) against the fleet config l.
func liveFindings(l *fleet.Loaded, rep haproxy.Report, s lbport.Settings) []liveFinding {
	var fs []liveFinding
	hc := l.LoadBalancer.HealthCheck
	var servers []string
	for _, h := range l.Hosts {
		servers = append(servers, h.ServerName())
	}
	fs = append(fs, liveFinding{"runtime-api", "ok", fmt.Sprintf("level admin; servers %s found", strings.Join(servers, ", "))})
	if len(rep.NoCheck) > 0 {
		f := liveFinding{Name: "no-check", Level: "warn", Detail: fmt.Sprintf(
			"%s: no health check (`check` missing on the server line): HAProxy never takes it out of rotation for a failing check, only the drain does", strings.Join(rep.NoCheck, ", "))}
		if l.Deploy.DrainMode == fleet.DrainModeHealth {
			f.Level = "fail"
			f.Detail = deploylb.NoCheckError(l, rep.NoCheck).Error()
		}
		fs = append(fs, f)
	}
	drift := func(field, mine, theirs, keyword string) {
		if mine == theirs {
			fs = append(fs, liveFinding{field, "ok", fmt.Sprintf("%s matches HAProxy's %s", mine, keyword)})
			return
		}
		fs = append(fs, liveFinding{field, "fail", fmt.Sprintf(
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
		fs = append(fs, liveFinding{"interval", "warn",
			"HAProxy's Runtime API does not expose inter and timeout check: set load_balancer.config_file to haproxy.cfg's path to compare them"})
	}
	return fs
}

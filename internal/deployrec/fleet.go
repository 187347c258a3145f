package deployrec

import (
	"strconv"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/timing"
)

// FleetOf is the part of cfg a report shows — the settings that decide a
// deploy's timing — and the verdict on each timing invariant with its slack.
func FleetOf(cfg fleet.Config) (Fleet, []Invariant) {
	var f Fleet
	for _, h := range cfg.Hosts {
		f.Hosts = append(f.Hosts, h.Name)
	}
	lb, hc := cfg.LoadBalancer, cfg.LoadBalancer.HealthCheck
	add := func(field, value string) { f.Settings = append(f.Settings, Setting{Field: field, Value: value}) }
	dur := func(field string, d time.Duration) { add(field, seconds(d)) }
	num := func(field string, n int) { add(field, strconv.Itoa(n)) }
	add("load_balancer.kind", lb.Kind)
	add("load_balancer.target_type", lb.TargetType)
	dur("load_balancer.health_check.interval", hc.Interval)
	dur("load_balancer.health_check.timeout", hc.Timeout)
	num("load_balancer.health_check.healthy_threshold", hc.HealthyThreshold)
	num("load_balancer.health_check.unhealthy_threshold", hc.UnhealthyThreshold)
	dur("load_balancer.deregistration_delay", lb.DeregistrationDelay)
	dur("load_balancer.idle_timeout", lb.IdleTimeout)
	dur("drain.pre_stop", cfg.Drain.PreStop)
	dur("drain.serve_period", cfg.Drain.ServePeriod)
	dur("drain.shutdown_timeout", cfg.Drain.ShutdownTimeout)
	dur("drain.max", cfg.Drain.Max)
	dur("backend.keepalive_idle_timeout", cfg.Backend.KeepAliveIdleTimeout)
	dur("backend.stop_grace_period", cfg.Backend.StopGracePeriod)
	add("deploy.drain_mode", cfg.Deploy.DrainMode)
	num("deploy.batch_size", max(cfg.Deploy.BatchSize, 1))

	var inv []Invariant
	for _, res := range timing.Evaluate(cfg).Results {
		i := Invariant{Name: res.Name, Level: res.Level.String(), Formula: res.Formula, Slack: res.SlackPhrase()}
		if res.HasSlack {
			s := res.Slack.Seconds()
			i.SlackSeconds = &s
		}
		inv = append(inv, i)
	}
	return f, inv
}

// seconds writes d as mythex.yml does: "5s", "0.4s", "150s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

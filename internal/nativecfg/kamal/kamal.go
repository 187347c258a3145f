// Package kamal reads Kamal 2's config/deploy.yml and translates kamal-proxy's
// switch into the timing model: kamal-proxy routes to the new container once
// its health check passes, stops sending new requests to the old one at once,
// lets in-flight requests finish for drain_timeout, then Kamal stops it.
package kamal

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/nativecfg"
)

// Kamal's documented defaults.
const (
	defaultInterval      = 1 * time.Second
	defaultTimeout       = 5 * time.Second
	defaultDrainTimeout  = 30
	defaultDeployTimeout = 30
)

type deployFile struct {
	Service        string `yaml:"service"`
	Image          string `yaml:"image"`
	DrainTimeout   *int   `yaml:"drain_timeout"`
	DeployTimeout  *int   `yaml:"deploy_timeout"`
	ReadinessDelay *int   `yaml:"readiness_delay"`
	Proxy          *struct {
		ResponseTimeout *int `yaml:"response_timeout"`
		Healthcheck     *struct {
			Path     string `yaml:"path"`
			Interval *int   `yaml:"interval"`
			Timeout  *int   `yaml:"timeout"`
		} `yaml:"healthcheck"`
	} `yaml:"proxy"`
	Labels map[string]string `yaml:"labels"`
}

// Read translates one deploy.yml.
func Read(file string, data []byte) ([]*nativecfg.Subject, error) {
	var d deployFile
	if err := yaml.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s := nativecfg.NewSubject(nativecfg.Kamal, "service "+d.Service, file)
	src := nativecfg.NewSource(data, 1)
	c := &s.Config
	// kamal-proxy takes the old container out of rotation itself when it
	// switches — nothing propagates — and cuts its in-flight requests when
	// drain_timeout ends: the target-group semantics of the embedded LB,
	// with drain_timeout as the deregistration delay. Kamal then stops the
	// container (docker stop -t drain_timeout): it listens until then.
	c.LoadBalancer.Kind, c.LoadBalancer.TargetType = fleet.KindEmbedded, fleet.TargetTypeIP
	c.LoadBalancer.PropagationMargin = 0
	s.Notes = append(s.Notes, "kamal-proxy stops sending new requests to the old container when it switches, lets in-flight requests finish for drain_timeout, then Kamal stops the container")
	secs := func(field, path string, v *int, def int, unit nativecfg.Unit) time.Duration {
		if v != nil {
			s.Bind(field, src.At(file, path), unit)
			return nativecfg.Secs(int64(*v))
		}
		s.Assume(field, src.At(file, path), unit, fmt.Sprintf("Kamal's default %d", def))
		return nativecfg.Secs(int64(def))
	}
	drain := secs("load_balancer.deregistration_delay", "drain_timeout", d.DrainTimeout, defaultDrainTimeout, nativecfg.Seconds)
	c.LoadBalancer.DeregistrationDelay = drain
	c.Drain.PreStop, c.Backend.StopGracePeriod = drain, 2*drain
	hc := &c.LoadBalancer.HealthCheck
	hc.HealthyThreshold, hc.UnhealthyThreshold = 1, 1
	hc.Interval, hc.Timeout = defaultInterval, defaultTimeout
	s.Unjudge("capacity", "Kamal boots the new container before stopping the old one")
	if d.Proxy != nil && d.Proxy.Healthcheck != nil {
		h := d.Proxy.Healthcheck
		hc.Interval = secs("load_balancer.health_check.interval", "proxy.healthcheck.interval", h.Interval, 1, nativecfg.Seconds)
		hc.Timeout = secs("load_balancer.health_check.timeout", "proxy.healthcheck.timeout", h.Timeout, 5, nativecfg.Seconds)
		if h.Path != "" {
			hc.Path = h.Path
		}
	} else {
		s.Notes = append(s.Notes, "proxy.healthcheck not set: kamal-proxy checks /up every 1s with a 5s timeout")
	}
	// kamal-proxy checks again before the previous answer is due: its
	// interval may be shorter than its timeout, unlike an ALB's.
	s.Unjudge("check-timeout", "kamal-proxy has no rule that the timeout be shorter than the interval")
	if d.Proxy != nil && d.Proxy.ResponseTimeout != nil {
		// A request may run response_timeout: drain_timeout must let it end.
		c.Backend.LongestRequest = nativecfg.Secs(int64(*d.Proxy.ResponseTimeout))
		c.Drain.ShutdownTimeout = drain // in-flight requests get the drain, no more
		s.Bind("backend.longest_request", src.At(file, "proxy.response_timeout"), nativecfg.Seconds).Derived = true
	}
	c.Timing.QuickReturnMax = secs("timing.quick_return_max", "deploy_timeout", d.DeployTimeout, defaultDeployTimeout, nativecfg.Seconds)
	if d.ReadinessDelay != nil {
		s.Notes = append(s.Notes, fmt.Sprintf("readiness_delay %d: applies only to containers without a proxy health check", *d.ReadinessDelay))
	}
	if err := s.ApplyFacts(func(key string) (string, nativecfg.Loc, bool) {
		v, ok := d.Labels[key]
		return v, src.At(file, "labels"+nativecfg.Key(key)), ok
	}); err != nil {
		return nil, err
	}
	return []*nativecfg.Subject{s}, s.Validate()
}

// Package kamal reads Kamal 2's config/deploy.yml and translates kamal-proxy's
// switch into the timing model: kamal-proxy routes to the new container once
// its health check passes, stops sending new requests to the old one at once,
// lets in-flight requests finish for drain_timeout, then Kamal stops it.
package kamal

import (
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/nativecfg"
	"github.com/mythex/mythex/internal/timing"
)

// Kamal's documented defaults.
const (
	defaultInterval      = 1 * time.Second
	defaultTimeout       = 5 * time.Second
	defaultDrainTimeout  = 30
	defaultDeployTimeout = 30
	// defaultResponseTimeout is kamal-proxy's response_timeout default.
	defaultResponseTimeout = 30
	// dockerStopTimeout is Docker's stop timeout when none is given.
	dockerStopTimeout = 10 * time.Second
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
	// container: it listens until then.
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
	// The old container listens, idle, through the drain; then docker stop
	// sends SIGTERM and SIGKILL after Docker's default 10 s.
	c.Drain.PreStop, c.Backend.StopGracePeriod = drain, drain+dockerStopTimeout
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
	// A request may run response_timeout (default 30): kamal-proxy cuts the
	// old container's requests when drain_timeout ends, so it must cover it.
	rt := int64(defaultResponseTimeout)
	if d.Proxy != nil && d.Proxy.ResponseTimeout != nil {
		rt = int64(*d.Proxy.ResponseTimeout)
	} else {
		s.Notes = append(s.Notes, "proxy.response_timeout not set: kamal-proxy's default 30 assumed")
	}
	drainLoc := src.At(file, "drain_timeout")
	s.Extra = append(s.Extra, timing.Within("drain", "proxy.response_timeout", nativecfg.Secs(rt), "drain_timeout", drain,
		"kamal-proxy cuts the old container's in-flight requests when drain_timeout ends: a request allowed to run response_timeout is cut on every deploy"))
	s.ExtraFix = map[string][]nativecfg.Change{"drain": {{Loc: drainLoc, AtLeast: true, To: strconv.FormatInt(rt, 10), From: strconv.FormatInt(int64(drain/time.Second), 10)}}}
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

// Package compose reads compose files (docker compose and Swarm stacks) with
// compose-go and translates each service behind Traefik into the timing
// model: Docker sends SIGTERM and SIGKILL after stop_grace_period; Traefik
// stops routing to a task when its provider notices — at once through Docker
// events, or at its next poll of a Swarm (refreshSeconds, default 15 s).
package compose

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/nativecfg"
)

// Docker's and Traefik's documented defaults, and the event lag assumed.
const (
	defaultStopGrace = 10 * time.Second
	// swarmRefreshDefault is Traefik's Swarm provider poll interval
	// (providers.swarm.refreshSeconds; swarmModeRefreshSeconds in v2).
	swarmRefreshDefault = 15 * time.Second
	// eventLag is Traefik's Docker provider reacting to a container event:
	// about 1 s (traefik#11252).
	eventLag = 1 * time.Second
	// Docker healthcheck defaults: interval 30s, timeout 30s, retries 3.
	defaultHCInterval, defaultHCTimeout, defaultHCRetries = 30 * time.Second, 30 * time.Second, 3
)

var refreshRe = regexp.MustCompile(`(?i)(swarmModeRefreshSeconds|providers\.swarm\.refreshSeconds)[= ]+(\d+)`)

// Read translates one compose file: a Subject per service, except the
// Traefik service itself.
func Read(file string, data []byte) ([]*nativecfg.Subject, error) {
	details := types.ConfigDetails{
		WorkingDir:  ".",
		ConfigFiles: []types.ConfigFile{{Filename: file, Content: data}},
		Environment: map[string]string{},
	}
	project, err := loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName("check", false)
		o.SkipResolveEnvironment = true
		o.SkipConsistencyCheck = true
		o.SkipNormalization = true
		o.ResolvePaths = false
		o.Interpolate.LookupValue = func(string) (string, bool) { return "", false }
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	src := nativecfg.NewSource(data, 1)
	// Traefik's own service, if in the file, tells the provider and its poll.
	swarm, refresh, refreshLoc, haveRefresh := false, swarmRefreshDefault, nativecfg.Loc{}, false
	names := make([]string, 0, len(project.Services))
	for n := range project.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	var traefikSvc string
	for _, n := range names {
		svc := project.Services[n]
		if !strings.Contains(svc.Image, "traefik") {
			continue
		}
		traefikSvc = n
		args := strings.Join(append(append([]string{}, svc.Command...), svc.Entrypoint...), " ")
		if strings.Contains(args, "swarm") {
			swarm = true
		}
		if m := refreshRe.FindStringSubmatch(args); m != nil {
			x, _ := strconv.Atoi(m[2])
			refresh, haveRefresh = nativecfg.Secs(int64(x)), true
			refreshLoc = src.At(file, "services."+n+".command")
		}
	}
	var out []*nativecfg.Subject
	for _, n := range names {
		if n == traefikSvc {
			continue
		}
		svc := project.Services[n]
		s, err := service(file, src, n, svc, swarm, refresh, refreshLoc, haveRefresh)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func service(file string, src *nativecfg.Source, n string, svc types.ServiceConfig, swarm bool, refresh time.Duration, refreshLoc nativecfg.Loc, haveRefresh bool) (*nativecfg.Subject, error) {
	s := nativecfg.NewSubject(nativecfg.Compose, "service "+n, file)
	c := &s.Config
	base := "services." + n
	if svc.StopGracePeriod != nil {
		c.Backend.StopGracePeriod = time.Duration(*svc.StopGracePeriod)
		s.Bind("backend.stop_grace_period", src.At(file, base+".stop_grace_period"), nativecfg.GoDuration)
	} else {
		c.Backend.StopGracePeriod = defaultStopGrace
		s.Assume("backend.stop_grace_period", src.At(file, base+".stop_grace_period"), nativecfg.GoDuration, "Docker's default 10s")
	}
	labels := map[string]string{}
	labelBase := map[string]string{}
	for k, v := range svc.Labels {
		labels[k], labelBase[k] = v, base+".labels"
	}
	if svc.Deploy != nil {
		swarm = swarm || svc.Deploy.Labels != nil
		for k, v := range svc.Deploy.Labels {
			labels[k], labelBase[k] = v, base+".deploy.labels"
		}
	}
	traefik := false
	for k := range labels {
		if strings.HasPrefix(k, "traefik.") {
			traefik = true
		}
	}
	c.LoadBalancer.Kind, c.LoadBalancer.TargetType = fleet.KindOther, fleet.TargetTypeIP
	switch {
	case traefik && swarm:
		c.LoadBalancer.PropagationMargin = refresh
		if haveRefresh {
			s.Bind("load_balancer.propagation_margin", refreshLoc, nativecfg.Seconds)
		} else {
			s.Notes = append(s.Notes, fmt.Sprintf("Traefik's Swarm provider polls every %s by default (providers.swarm.refreshSeconds): it may route to a stopped task until its next poll", swarmRefreshDefault))
		}
	case traefik:
		c.LoadBalancer.PropagationMargin = eventLag
		s.Notes = append(s.Notes, fmt.Sprintf("Traefik's Docker provider drops a container on its events, about %s after it stops (assumed)", eventLag))
	default:
		s.Unjudge("overlap", "no proxy routes to this service in the file (no traefik.* labels): only its stop is judged")
		s.Unjudge("quick-return", "no proxy routes to this service in the file")
	}
	hc := &c.LoadBalancer.HealthCheck
	hc.Interval, hc.Timeout, hc.UnhealthyThreshold, hc.HealthyThreshold = defaultHCInterval, defaultHCTimeout-time.Second, defaultHCRetries, 1
	if h := svc.HealthCheck; h != nil && !h.Disable {
		if h.Interval != nil {
			hc.Interval = time.Duration(*h.Interval)
			s.Bind("load_balancer.health_check.interval", src.At(file, base+".healthcheck.interval"), nativecfg.GoDuration)
		}
		if h.Timeout != nil {
			hc.Timeout = time.Duration(*h.Timeout)
			s.Bind("load_balancer.health_check.timeout", src.At(file, base+".healthcheck.timeout"), nativecfg.GoDuration)
		}
		if h.Retries != nil {
			hc.UnhealthyThreshold = int(*h.Retries)
			s.Bind("load_balancer.health_check.unhealthy_threshold", src.At(file, base+".healthcheck.retries"), nativecfg.Count)
		}
	}
	// Docker starts the next check an interval after the last one ended:
	// no timeout < interval rule.
	s.Unjudge("check-timeout", "Docker starts the next healthcheck an interval after the last one ends")
	if svc.Deploy != nil && svc.Deploy.UpdateConfig != nil && svc.Deploy.UpdateConfig.Order == "start-first" {
		s.Notes = append(s.Notes, "update_config.order start-first: the new task starts before the old one stops")
	}
	if err := s.ApplyFacts(func(key string) (string, nativecfg.Loc, bool) {
		v, ok := labels[key]
		return v, src.At(file, labelBase[key]+nativecfg.Key(key)), ok
	}); err != nil {
		return nil, err
	}
	return s, s.Validate()
}

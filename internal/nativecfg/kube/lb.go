package kube

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/nativecfg"
)

type lbKind int

const (
	proxyLB lbKind = iota // kube-proxy: a Service without an ingress
	nginxLB               // ingress-nginx
	albLB                 // the AWS Load Balancer Controller's ALB
)

// albPrefix starts the AWS Load Balancer Controller's annotations.
const albPrefix = "alb.ingress.kubernetes.io/"

// lbOf says which controller serves an Ingress.
func lbOf(in *object) lbKind {
	class := in.meta.Annotations["kubernetes.io/ingress.class"]
	if in.ingress.Spec.IngressClassName != nil {
		class = *in.ingress.Spec.IngressClassName
	}
	if class == "alb" {
		return albLB
	}
	for k := range in.meta.Annotations {
		if strings.HasPrefix(k, albPrefix) {
			return albLB
		}
	}
	return nginxLB
}

// loadBalancer fills s's load balancer from what routes to the workload.
func loadBalancer(s *nativecfg.Subject, r route) error {
	c := &s.Config
	switch {
	case r.tgb != nil || (r.ingress != nil && lbOf(r.ingress) == albLB):
		return alb(s, r)
	case r.ingress != nil:
		endpointsLB(c)
		s.Notes = append(s.Notes, fmt.Sprintf("%s routes through ingress-nginx, which drops a terminating pod when its endpoint update arrives: about %s assumed", name(r.ingress), endpointLag))
	case r.service != nil:
		endpointsLB(c)
		s.Notes = append(s.Notes, fmt.Sprintf("%s reaches the pods through kube-proxy, which drops a terminating pod when its endpoint update arrives: about %s assumed", name(r.service), endpointLag))
	default:
		endpointsLB(c)
		s.Notes = append(s.Notes, fmt.Sprintf("no Service selects these pods in the files given: an endpoint-following proxy with a %s lag assumed", endpointLag))
	}
	s.Unjudge("check-timeout", "the readiness probe is the kubelet's, not a load balancer's: no vendor range applies")
	return nil
}

// annotations of the ALB: the Ingress's, overridden by the Service's (the
// controller reads both).
type albAnn struct {
	r route
}

func (a albAnn) get(key string) (string, *object, bool) {
	if a.r.service != nil {
		if v, ok := a.r.service.meta.Annotations[albPrefix+key]; ok {
			return v, a.r.service, true
		}
	}
	if a.r.ingress != nil {
		if v, ok := a.r.ingress.meta.Annotations[albPrefix+key]; ok {
			return v, a.r.ingress, true
		}
	}
	return "", nil, false
}

// where an absent annotation belongs.
func (a albAnn) home() *object {
	if a.r.ingress != nil {
		return a.r.ingress
	}
	return a.r.service
}

// alb reads the AWS Load Balancer Controller's settings: target type,
// health check, target-group and load-balancer attributes.
func alb(s *nativecfg.Subject, r route) error {
	c := &s.Config
	lb := &c.LoadBalancer
	lb.Kind = fleet.KindALB
	s.IdleTimeoutKnown = true
	lb.PropagationMargin, lb.PropagationMax = albPropagation, albPropagationMax
	a := albAnn{r}
	home := a.home()
	annPath := func(key string) string { return "metadata.annotations" + nativecfg.Key(albPrefix+key) }

	lb.TargetType = fleet.TargetTypeInstance
	switch {
	case r.tgb != nil && r.tgb.tgb.Spec.TargetType != "":
		lb.TargetType = r.tgb.tgb.Spec.TargetType
	default:
		if v, _, ok := a.get("target-type"); ok {
			lb.TargetType = v
		}
	}
	if lb.TargetType != fleet.TargetTypeIP && lb.TargetType != fleet.TargetTypeInstance {
		return fmt.Errorf("%s: target-type %q: want instance or ip", s.File, lb.TargetType)
	}
	s.Notes = append(s.Notes, fmt.Sprintf("the ALB reaches the pods as %s targets; the AWS Load Balancer Controller deregisters a terminating pod, which takes about %s to reach the ALB (up to %s seen)",
		lb.TargetType, albPropagation, albPropagationMax))

	hc := &lb.HealthCheck
	num := func(field, key string, def int, dur bool) error {
		v, o, ok := a.get(key)
		n := def
		if ok {
			var err error
			if n, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				return fmt.Errorf("%s: %s%s is %q: want a whole number", o.file, albPrefix, key, v)
			}
			s.Bind(field, o.at(annPath(key)), unitOf(dur))
		} else if home != nil {
			s.Assume(field, home.at(annPath(key)), unitOf(dur), fmt.Sprintf("the controller's default %d", def))
		}
		switch field {
		case "load_balancer.health_check.interval":
			hc.Interval = nativecfg.Secs(int64(n))
		case "load_balancer.health_check.timeout":
			hc.Timeout = nativecfg.Secs(int64(n))
		case "load_balancer.health_check.healthy_threshold":
			hc.HealthyThreshold = n
		case "load_balancer.health_check.unhealthy_threshold":
			hc.UnhealthyThreshold = n
		}
		return nil
	}
	for _, f := range []struct {
		field, key string
		def        int
		dur        bool
	}{
		{"load_balancer.health_check.interval", "healthcheck-interval-seconds", 15, true},
		{"load_balancer.health_check.timeout", "healthcheck-timeout-seconds", 5, true},
		{"load_balancer.health_check.healthy_threshold", "healthy-threshold-count", 2, false},
		{"load_balancer.health_check.unhealthy_threshold", "unhealthy-threshold-count", 2, false},
	} {
		// The readiness probe's bindings give way to the ALB's own check.
		dropBinding(s, f.field)
		if err := num(f.field, f.key, f.def, f.dur); err != nil {
			return err
		}
	}
	if v, _, ok := a.get("healthcheck-path"); ok {
		hc.Path = v
	}
	if err := attr(s, a, "target-group-attributes", "deregistration_delay.timeout_seconds", "load_balancer.deregistration_delay", 300); err != nil {
		return err
	}
	if err := attr(s, a, "load-balancer-attributes", "idle_timeout.timeout_seconds", "load_balancer.idle_timeout", 60); err != nil {
		return err
	}
	if r.tgb != nil && r.ingress == nil {
		s.Notes = append(s.Notes, "a TargetGroupBinding names a target group made elsewhere: its health check and attributes are not in these files, the ALB's defaults are assumed")
	}
	return nil
}

// attr reads one key=value of a comma-separated attributes annotation.
func attr(s *nativecfg.Subject, a albAnn, ann, key, field string, def int64) error {
	v, o, ok := a.get(ann)
	n := def
	found := false
	if ok {
		for _, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(strings.TrimSpace(kv), "=")
			if k != key {
				continue
			}
			x, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
			if err != nil {
				return fmt.Errorf("%s: %s%s %s is %q: want whole seconds", o.file, albPrefix, ann, key, val)
			}
			n, found = x, true
		}
	}
	path := "metadata.annotations" + nativecfg.Key(albPrefix+ann)
	switch {
	case found:
		b := s.Bind(field, o.at(path), nativecfg.Seconds)
		b.Loc.Path += " " + key
	case a.home() != nil:
		b := s.Assume(field, a.home().at(path), nativecfg.Seconds, fmt.Sprintf("the ALB's default %s=%d", key, def))
		b.Loc.Path += " " + key
	}
	switch field {
	case "load_balancer.deregistration_delay":
		s.Config.LoadBalancer.DeregistrationDelay = nativecfg.Secs(n)
	case "load_balancer.idle_timeout":
		s.Config.LoadBalancer.IdleTimeout = nativecfg.Secs(n)
	}
	return nil
}

func dropBinding(s *nativecfg.Subject, field string) {
	out := s.Bindings[:0]
	for _, b := range s.Bindings {
		if b.Field != field {
			out = append(out, b)
		}
	}
	s.Bindings = out
}

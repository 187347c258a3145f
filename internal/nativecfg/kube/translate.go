package kube

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/nativecfg"
)

// Kubernetes defaults (API reference) and the lags this reader assumes.
const (
	// defaultGrace is terminationGracePeriodSeconds' default.
	defaultGrace = 30
	// Probe defaults: periodSeconds, timeoutSeconds, failureThreshold,
	// successThreshold.
	defaultPeriod, defaultProbeTimeout, defaultFailure, defaultSuccess = 10, 1, 3, 1
	// endpointLag is how long a terminating pod's removal from the
	// EndpointSlices takes to reach kube-proxy and ingress-nginx: about
	// 1–2 s on a healthy cluster (ingress-nginx#7097).
	endpointLag = 2 * time.Second
	// albPropagation is the AWS LB controller's deregistration reaching the
	// ALB's nodes, typically 10–15 s; albPropagationMax is the longest users
	// report (40 s and more, aws-load-balancer-controller#2106).
	albPropagation    = 15 * time.Second
	albPropagationMax = 60 * time.Second
)

// translate builds the Subject of one workload and what routes to it.
func translate(w *object, r route) (*nativecfg.Subject, error) {
	s := nativecfg.NewSubject(nativecfg.Kubernetes, name(w), w.file)
	c := &s.Config
	pod := &w.workload.template.Spec
	base := "spec.template.spec"
	if w.kind == "List" {
		base = "spec.template.spec"
	}

	// The grace period counts preStop: SIGKILL comes terminationGracePeriodSeconds
	// after termination starts, whatever preStop did.
	if pod.TerminationGracePeriodSeconds != nil {
		c.Backend.StopGracePeriod = nativecfg.Secs(*pod.TerminationGracePeriodSeconds)
		s.Bind("backend.stop_grace_period", w.at(base+".terminationGracePeriodSeconds"), nativecfg.Seconds)
	} else {
		c.Backend.StopGracePeriod = nativecfg.Secs(defaultGrace)
		s.Assume("backend.stop_grace_period", w.at(base+".terminationGracePeriodSeconds"), nativecfg.Seconds, "Kubernetes' default 30")
	}
	if len(pod.Containers) == 0 {
		return nil, fmt.Errorf("%s: %s has no containers", w.file, name(w))
	}
	ci, ct := servingContainer(pod)
	cpath := fmt.Sprintf("%s.containers[%d]", base, ci)
	if err := preStop(s, w, ct, cpath); err != nil {
		return nil, err
	}
	probe(s, w, ct, cpath)
	if err := s.ApplyFacts(factsOf(w)); err != nil {
		return nil, err
	}
	if !hasFact(w, "serve-period") {
		s.Notes = append(s.Notes, "assumed: the app stops accepting connections at SIGTERM (declare "+nativecfg.FactPrefix+"serve-period if it keeps serving)")
	}
	if err := loadBalancer(s, r); err != nil {
		return nil, err
	}
	return s, s.Validate()
}

// servingContainer picks the container the Service reaches: the first with a
// preStop hook, else the first.
func servingContainer(pod *corev1.PodSpec) (int, *corev1.Container) {
	for i := range pod.Containers {
		if l := pod.Containers[i].Lifecycle; l != nil && l.PreStop != nil {
			return i, &pod.Containers[i]
		}
	}
	return 0, &pod.Containers[0]
}

// preStop reads the sleep of the container's preStop hook: the sleep action,
// or an exec of `sleep N` (directly or through a shell).
func preStop(s *nativecfg.Subject, w *object, ct *corev1.Container, cpath string) error {
	l := ct.Lifecycle
	p := cpath + ".lifecycle.preStop"
	if l == nil || l.PreStop == nil {
		s.Assume("drain.pre_stop", w.at(p+".sleep.seconds"), nativecfg.Seconds, "no preStop hook: 0")
		return nil
	}
	h := l.PreStop
	switch {
	case h.Sleep != nil:
		s.Config.Drain.PreStop = nativecfg.Secs(h.Sleep.Seconds)
		s.Bind("drain.pre_stop", w.at(p+".sleep.seconds"), nativecfg.Seconds)
	case h.Exec != nil:
		secs, ok := sleepOf(h.Exec.Command)
		if !ok {
			s.Notes = append(s.Notes, fmt.Sprintf("%s.exec.command %q: no `sleep N` found, its length is unknown: 0 assumed", p, strings.Join(h.Exec.Command, " ")))
			s.Assume("drain.pre_stop", w.at(p+".exec.command"), nativecfg.Seconds, "an exec hook of unknown length: 0")
			return nil
		}
		s.Config.Drain.PreStop = secs
		s.Bind("drain.pre_stop", w.at(p+".exec.command"), nativecfg.Seconds)
	default:
		s.Notes = append(s.Notes, p+": an httpGet or tcpSocket hook of unknown length: 0 assumed")
		s.Assume("drain.pre_stop", w.at(p), nativecfg.Seconds, "a hook of unknown length: 0")
	}
	return nil
}

// sleepOf finds `sleep N` in an exec command: ["sleep","15"] or
// ["/bin/sh","-c","sleep 15 && nginx -s quit"]. N may be fractional.
func sleepOf(cmd []string) (time.Duration, bool) {
	words := strings.Fields(strings.Join(cmd, " "))
	for i := 0; i+1 < len(words); i++ {
		if words[i] != "sleep" && !strings.HasSuffix(words[i], "/sleep") {
			continue
		}
		arg := strings.Trim(words[i+1], `"';&`)
		arg = strings.TrimSuffix(arg, "s")
		f, err := strconv.ParseFloat(arg, 64)
		if err == nil && f >= 0 {
			return time.Duration(f * float64(time.Second)), true
		}
	}
	return 0, false
}

// probe reads the readiness probe: it is what the kubelet checks, and for a
// proxy that follows endpoints it decides how fast a new pod gets traffic.
func probe(s *nativecfg.Subject, w *object, ct *corev1.Container, cpath string) {
	hc := &s.Config.LoadBalancer.HealthCheck
	p := cpath + ".readinessProbe"
	rp := ct.ReadinessProbe
	if rp == nil {
		rp = &corev1.Probe{}
	}
	set := func(field, key string, v int32, def int32, dur bool) {
		n := v
		if n == 0 {
			n = def
			s.Assume(field, w.at(p+"."+key), unitOf(dur), fmt.Sprintf("Kubernetes' default %d", def))
		} else {
			s.Bind(field, w.at(p+"."+key), unitOf(dur))
		}
		switch field {
		case "load_balancer.health_check.interval":
			hc.Interval = nativecfg.Secs(int64(n))
		case "load_balancer.health_check.timeout":
			hc.Timeout = nativecfg.Secs(int64(n))
		case "load_balancer.health_check.unhealthy_threshold":
			hc.UnhealthyThreshold = int(n)
		case "load_balancer.health_check.healthy_threshold":
			hc.HealthyThreshold = int(n)
		}
	}
	set("load_balancer.health_check.interval", "periodSeconds", rp.PeriodSeconds, defaultPeriod, true)
	set("load_balancer.health_check.timeout", "timeoutSeconds", rp.TimeoutSeconds, defaultProbeTimeout, true)
	set("load_balancer.health_check.unhealthy_threshold", "failureThreshold", rp.FailureThreshold, defaultFailure, false)
	set("load_balancer.health_check.healthy_threshold", "successThreshold", rp.SuccessThreshold, defaultSuccess, false)
	if rp.HTTPGet != nil && rp.HTTPGet.Path != "" {
		hc.Path = rp.HTTPGet.Path
	}
}

func unitOf(dur bool) nativecfg.Unit {
	if dur {
		return nativecfg.Seconds
	}
	return nativecfg.Count
}

// factsOf reads app facts from the pod template's annotations, then the
// workload's.
func factsOf(w *object) func(string) (string, nativecfg.Loc, bool) {
	return func(key string) (string, nativecfg.Loc, bool) {
		if v, ok := w.workload.template.Annotations[key]; ok {
			return v, w.at("spec.template.metadata.annotations" + nativecfg.Key(key)), true
		}
		if v, ok := w.meta.Annotations[key]; ok {
			return v, w.at("metadata.annotations" + nativecfg.Key(key)), true
		}
		return "", nativecfg.Loc{}, false
	}
}

func hasFact(w *object, fact string) bool {
	_, _, ok := factsOf(w)(nativecfg.FactPrefix + fact)
	return ok
}

// keepKind makes a Kubernetes subject's LB of kind other with ip targets.
func endpointsLB(c *fleet.Config) {
	c.LoadBalancer.Kind, c.LoadBalancer.TargetType = fleet.KindOther, fleet.TargetTypeIP
	c.LoadBalancer.PropagationMargin = endpointLag
}

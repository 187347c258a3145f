// Package ecs reads Amazon ECS task definitions and services (as registered,
// or as `aws ecs describe-task-definition` / `describe-services` print them)
// and `aws elbv2 describe-target-groups` / `describe-target-group-attributes`
// output with encoding/json, and translates the service's tasks into the
// timing model: to stop a task behind a target group, ECS deregisters it,
// waits for the target to drain (the deregistration delay), and only then
// sends SIGTERM, with SIGKILL stopTimeout later.
package ecs

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/nativecfg"
)

// ECS's and the ALB's documented defaults, and the propagation assumed.
const (
	defaultStopTimeout = 30
	albPropagation     = 15 * time.Second
)

type container struct {
	Name         string            `json:"name"`
	StopTimeout  *int              `json:"stopTimeout"`
	PortMappings []any             `json:"portMappings"`
	DockerLabels map[string]string `json:"dockerLabels"`
}

type taskDef struct {
	Family               string      `json:"family"`
	ContainerDefinitions []container `json:"containerDefinitions"`
}

type service struct {
	ServiceName                   string `json:"serviceName"`
	HealthCheckGracePeriodSeconds *int   `json:"healthCheckGracePeriodSeconds"`
	LoadBalancers                 []struct {
		TargetGroupArn string `json:"targetGroupArn"`
	} `json:"loadBalancers"`
}

type targetGroup struct {
	TargetGroupArn             string `json:"TargetGroupArn"`
	TargetType                 string `json:"TargetType"`
	HealthCheckIntervalSeconds *int   `json:"HealthCheckIntervalSeconds"`
	HealthCheckTimeoutSeconds  *int   `json:"HealthCheckTimeoutSeconds"`
	HealthyThresholdCount      *int   `json:"HealthyThresholdCount"`
	UnhealthyThresholdCount    *int   `json:"UnhealthyThresholdCount"`
}

// doc is one file, decoded by what it holds.
type doc struct {
	file   string
	src    *nativecfg.Source
	prefix string // "taskDefinition." when wrapped
	task   *taskDef
	svc    *service
	tgs    []targetGroup
	attrs  []struct{ Key, Value string }
}

// Read translates the ECS files given together: a Subject per task
// definition, with the service, target group and attributes found among the
// files (ECS files of one app come as several JSON documents).
func Read(files map[string][]byte) ([]*nativecfg.Subject, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var tasks []doc
	var svc, tg, attrs *doc
	for _, n := range names {
		d, err := decode(n, files[n])
		if err != nil {
			return nil, err
		}
		switch {
		case d.task != nil:
			tasks = append(tasks, d)
		case d.svc != nil:
			svc = &d
		case d.tgs != nil:
			tg = &d
		case d.attrs != nil:
			attrs = &d
		}
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("%s: ECS files without a task definition: give the task definition JSON too (aws ecs describe-task-definition)", names[0])
	}
	var out []*nativecfg.Subject
	for i := range tasks {
		s, err := translate(&tasks[i], svc, tg, attrs)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func decode(file string, data []byte) (doc, error) {
	d := doc{file: file, src: nativecfg.NewSource(data, 1)}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return d, fmt.Errorf("%s: %w", file, err)
	}
	un := func(raw json.RawMessage, v any) error {
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		return nil
	}
	switch {
	case top["containerDefinitions"] != nil:
		d.task = &taskDef{}
		return d, un(data, d.task)
	case len(top["taskDefinition"]) > 0 && top["taskDefinition"][0] == '{':
		d.task, d.prefix = &taskDef{}, "taskDefinition."
		return d, un(top["taskDefinition"], d.task)
	case top["services"] != nil:
		var ss []service
		if err := un(top["services"], &ss); err != nil || len(ss) == 0 {
			return d, fmt.Errorf("%s: services: want at least one service", file)
		}
		d.svc, d.prefix = &ss[0], "services[0]."
		return d, nil
	case top["service"] != nil:
		d.svc, d.prefix = &service{}, "service."
		return d, un(top["service"], d.svc)
	case top["loadBalancers"] != nil || top["deploymentConfiguration"] != nil:
		d.svc = &service{}
		return d, un(data, d.svc)
	case top["TargetGroups"] != nil:
		return d, un(top["TargetGroups"], &d.tgs)
	case top["Attributes"] != nil:
		return d, un(top["Attributes"], &d.attrs)
	}
	return d, fmt.Errorf("%s: not an ECS task definition, service, or elbv2 target group JSON", file)
}

func translate(td *doc, svc, tg, attrs *doc) (*nativecfg.Subject, error) {
	t := td.task
	if len(t.ContainerDefinitions) == 0 {
		return nil, fmt.Errorf("%s: containerDefinitions is empty", td.file)
	}
	name := "task definition " + t.Family
	if svc != nil && svc.svc.ServiceName != "" {
		name = "service " + svc.svc.ServiceName + " (" + name + ")"
	}
	s := nativecfg.NewSubject(nativecfg.ECS, name, td.file)
	c := &s.Config
	lb := &c.LoadBalancer
	lb.Kind, lb.TargetType, lb.PropagationMargin = fleet.KindALB, fleet.TargetTypeInstance, albPropagation
	// The load balancer's idle timeout is not in these files: the ALB's
	// default 60 s.
	lb.IdleTimeout, s.IdleTimeoutKnown = 60*time.Second, true
	ci := 0
	for i, ct := range t.ContainerDefinitions {
		if len(ct.PortMappings) > 0 {
			ci = i
			break
		}
	}
	ct := t.ContainerDefinitions[ci]

	// The target group: its health check and its deregistration delay.
	hc := &lb.HealthCheck
	hc.Interval, hc.Timeout, hc.HealthyThreshold, hc.UnhealthyThreshold = 30*time.Second, 5*time.Second, 5, 2
	tgLoc := func(key string) nativecfg.Loc { return nativecfg.Loc{File: td.file, Path: "target group " + key} }
	var g *targetGroup
	if tg != nil && len(tg.tgs) > 0 {
		g = &tg.tgs[0]
		tgLoc = func(key string) nativecfg.Loc { return tg.src.At(tg.file, "TargetGroups[0]."+key) }
		if g.TargetType == "ip" {
			s.Notes = append(s.Notes, "ip targets (awsvpc)")
		}
	}
	num := func(field, key string, v *int, def int, dur bool) {
		n := def
		unit := nativecfg.Count
		if dur {
			unit = nativecfg.Seconds
		}
		if v != nil {
			n = *v
			s.Bind(field, tgLoc(key), unit)
		} else {
			s.Assume(field, tgLoc(key), unit, fmt.Sprintf("the ALB's default %d", def))
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
	}
	var gi, gt, gh, gu *int
	if g != nil {
		gi, gt, gh, gu = g.HealthCheckIntervalSeconds, g.HealthCheckTimeoutSeconds, g.HealthyThresholdCount, g.UnhealthyThresholdCount
	}
	num("load_balancer.health_check.interval", "HealthCheckIntervalSeconds", gi, 30, true)
	num("load_balancer.health_check.timeout", "HealthCheckTimeoutSeconds", gt, 5, true)
	num("load_balancer.health_check.healthy_threshold", "HealthyThresholdCount", gh, 5, false)
	num("load_balancer.health_check.unhealthy_threshold", "UnhealthyThresholdCount", gu, 2, false)

	r := int64(300)
	rLoc := nativecfg.Loc{File: td.file, Path: "target group attribute deregistration_delay.timeout_seconds"}
	found := false
	if attrs != nil {
		for i, a := range attrs.attrs {
			if a.Key == "deregistration_delay.timeout_seconds" {
				x, err := strconv.ParseInt(a.Value, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("%s: deregistration_delay.timeout_seconds is %q: want whole seconds", attrs.file, a.Value)
				}
				r, found = x, true
				rLoc = attrs.src.At(attrs.file, fmt.Sprintf("Attributes[%d].Value", i))
			}
		}
	}
	lb.DeregistrationDelay = nativecfg.Secs(r)

	// ECS drains first: SIGTERM comes only when the target has drained, so
	// the task listens for the whole delay, and stopTimeout runs after it.
	c.Drain.PreStop = lb.DeregistrationDelay
	stop := int64(defaultStopTimeout)
	cPath := td.prefix + fmt.Sprintf("containerDefinitions[%d].stopTimeout", ci)
	if ct.StopTimeout != nil {
		stop = int64(*ct.StopTimeout)
		s.Bind("backend.stop_grace_period", td.src.At(td.file, cPath), nativecfg.Seconds).Offset = lb.DeregistrationDelay
	} else {
		s.Assume("backend.stop_grace_period", td.src.At(td.file, cPath), nativecfg.Seconds, "ECS's default 30").Offset = lb.DeregistrationDelay
	}
	c.Backend.StopGracePeriod = lb.DeregistrationDelay + nativecfg.Secs(stop)
	if found {
		s.Bind("load_balancer.deregistration_delay", rLoc, nativecfg.Seconds)
	} else {
		s.Assume("load_balancer.deregistration_delay", rLoc, nativecfg.Seconds, "the ALB's default 300")
	}
	s.Notes = append(s.Notes, fmt.Sprintf("ECS deregisters a stopping task, waits for it to drain (deregistration delay %ds), then sends SIGTERM; the ALB's data plane follows the deregistration in about %s (assumed)", r, albPropagation))
	if err := s.ApplyFacts(func(key string) (string, nativecfg.Loc, bool) {
		v, ok := ct.DockerLabels[key]
		return v, td.src.At(td.file, td.prefix+fmt.Sprintf("containerDefinitions[%d].dockerLabels", ci)+nativecfg.Key(key)), ok
	}); err != nil {
		return nil, err
	}
	return s, s.Validate()
}

package fleet

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
)

var varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks a Config built in code the way Load checks a file: enums,
// positive intervals and thresholds, no negative durations, propagation_max
// not below propagation_margin, unique hosts. It returns the problems
// joined, each a *FieldError matching ErrInvalid, or nil. Timing relations
// between fields are not checked here; that is `mythex check` (package timing).
func (c *Config) Validate() error {
	p := &problems{lines: map[string]int{}}
	c.validate(p)
	return p.err()
}

func (c *Config) validate(p *problems) {
	lb := &c.LoadBalancer
	oneOf(p, "load_balancer.kind", lb.Kind, KindEmbedded, KindHAProxy, KindALB, KindOther)
	oneOf(p, "load_balancer.target_type", lb.TargetType, TargetTypeInstance, TargetTypeIP)
	oneOf(p, "load_balancer.algorithm", lb.Algorithm, AlgorithmRoundRobin, AlgorithmLeastOutstandingRequests)
	hc := &lb.HealthCheck
	if hc.Path == "" || hc.Path[0] != '/' {
		p.add("load_balancer.health_check.path", "must be an absolute HTTP path like /healthz, got %q", hc.Path)
	}
	positive(p, "load_balancer.health_check.interval", hc.Interval)
	positive(p, "load_balancer.health_check.timeout", hc.Timeout)
	atLeast(p, "load_balancer.health_check.healthy_threshold", hc.HealthyThreshold, 1)
	atLeast(p, "load_balancer.health_check.unhealthy_threshold", hc.UnhealthyThreshold, 1)
	positive(p, "load_balancer.idle_timeout", lb.IdleTimeout)
	if lb.PropagationMax != 0 && lb.PropagationMax < lb.PropagationMargin {
		p.add("load_balancer.propagation_max", "must be at least propagation_margin (%v), got %v; leave it out to use propagation_margin", lb.PropagationMargin, lb.PropagationMax)
	}
	if lb.TargetGroupARN != "" && (!strings.HasPrefix(lb.TargetGroupARN, "arn:") || !strings.Contains(lb.TargetGroupARN, ":targetgroup/")) {
		p.add("load_balancer.target_group_arn", "must be a target group ARN like arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web/0123456789abcdef, got %q", lb.TargetGroupARN)
	}
	if lb.Endpoint != "" && !strings.HasPrefix(lb.Endpoint, "http://") && !strings.HasPrefix(lb.Endpoint, "https://") {
		p.add("load_balancer.endpoint", "must be a URL starting with https:// or http://, got %q", lb.Endpoint)
	}
	c.validateHAProxy(p)
	hostPort(p, "load_balancer.listen", lb.Listen)
	hostPort(p, "load_balancer.admin_listen", lb.AdminListen)

	notNegative(p, "load_balancer.deregistration_delay", lb.DeregistrationDelay)
	notNegative(p, "load_balancer.propagation_margin", lb.PropagationMargin)
	notNegative(p, "load_balancer.propagation_max", lb.PropagationMax)
	notNegative(p, "drain.pre_stop", c.Drain.PreStop)
	notNegative(p, "drain.serve_period", c.Drain.ServePeriod)
	notNegative(p, "drain.shutdown_timeout", c.Drain.ShutdownTimeout)
	notNegative(p, "backend.longest_request", c.Backend.LongestRequest)
	notNegative(p, "timing.margin", c.Timing.Margin)
	positive(p, "drain.max", c.Drain.Max)
	positive(p, "backend.keepalive_idle_timeout", c.Backend.KeepAliveIdleTimeout)
	positive(p, "backend.stop_grace_period", c.Backend.StopGracePeriod)
	positive(p, "watchdog.interval", c.Watchdog.Interval)
	atLeast(p, "watchdog.failures_before_heal", c.Watchdog.FailuresBeforeHeal, 1)
	atLeast(p, "deploy.batch_size", c.Deploy.BatchSize, 1)
	oneOf(p, "deploy.drain_mode", c.Deploy.DrainMode, DrainModeDeregister, DrainModeHealth, DrainModeBoth)
	positive(p, "deploy.lease_ttl", c.Deploy.LeaseTTL)
	if c.Deploy.LeaseTTL > MaxLeaseTTL {
		p.add("deploy.lease_ttl", "%v is longer than %v: a deploy that dies would leave its host off its last good version that long; use something like 30s", c.Deploy.LeaseTTL, MaxLeaseTTL)
	}
	notNegative(p, "deploy.min_healthy_time", c.Deploy.MinHealthyTime)
	if _, err := c.Deploy.InService(len(c.Hosts)); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			p.add(fe.Field, "%s", fe.Msg)
		}
	}
	for i, name := range c.Deploy.TargetServices {
		if strings.TrimSpace(name) == "" {
			p.add(fmt.Sprintf("deploy.target_services[%d]", i), "must name a service of deploy.compose, got an empty name")
		}
	}
	for i, name := range c.Deploy.Verify {
		if strings.TrimSpace(name) == "" {
			p.add(fmt.Sprintf("deploy.verify[%d]", i), "must name a service of deploy.compose, got an empty name")
		}
	}
	for name, argv := range map[string][]string{"pre_deploy": c.Deploy.Hooks.PreDeploy, "post_deploy": c.Deploy.Hooks.PostDeploy,
		"on_failure": c.Deploy.Hooks.OnFailure, "on_rollback": c.Deploy.Hooks.OnRollback} {
		if len(argv) > 0 && strings.TrimSpace(argv[0]) == "" {
			p.add("deploy.hooks."+name, "the program (first element) is empty; write an argv list like [\"notify-chat\", \"deployed\"]")
		}
	}
	if c.Deploy.Hooks.Timeout < 0 {
		p.add("deploy.hooks.timeout", "must not be negative, got %v", c.Deploy.Hooks.Timeout)
	}
	positive(p, "timing.quick_return_max", c.Timing.QuickReturnMax)

	names := map[string]int{}
	targets := map[string]int{}
	// Every address mythex listens on or dials must be its own: two hosts
	// with one agent, or a target on the LB's own port, would deploy one
	// host twice or route the LB to itself.
	addrs := map[string]string{}
	claim := func(field, addr string) {
		if addr == "" {
			return
		}
		if other, dup := addrs[addr]; dup {
			p.add(field, "address %q is also used by %s; each target, agent and LB listener needs its own host:port", addr, other)
			return
		}
		addrs[addr] = field
	}
	claim("load_balancer.listen", lb.Listen)
	claim("load_balancer.admin_listen", lb.AdminListen)
	for i, h := range c.Hosts {
		f := fmt.Sprintf("hosts[%d]", i)
		if j, dup := names[h.Name]; dup && h.Name != "" {
			p.add(f+".name", "host name %q is also used by hosts[%d]; names must be unique", h.Name, j)
		}
		names[h.Name] = i
		if j, dup := targets[h.Target]; dup && h.Target != "" {
			p.add(f+".target", "target %q is also used by hosts[%d]; each host needs its own", h.Target, j)
		} else {
			claim(f+".target", h.Target)
		}
		targets[h.Target] = i
		if h.SSH != "" && h.Agent != "" {
			// Reached through SSH, the agent's address is as its own
			// machine sees it (127.0.0.1:9200 on every host): it is unique
			// per SSH destination.
			claim(f+".agent", h.Agent+" through ssh "+sshHost(h.SSH))
		} else {
			claim(f+".agent", h.Agent)
		}
		if h.Name == "" {
			p.add(f+".name", "must not be empty")
		}
		hostPort(p, f+".target", h.Target)
		if h.Agent != "" {
			hostPort(p, f+".agent", h.Agent)
		}
		if h.SSH != "" && (strings.ContainsAny(h.SSH, " \t\n/") || strings.HasPrefix(h.SSH, "-") || strings.HasSuffix(h.SSH, "@")) {
			p.add(f+".ssh", "%q is not user@host[:port]; write it like deploy@10.0.0.5 or deploy@web-1:2222", h.SSH)
		}
		for k := range h.Vars {
			switch {
			case !varNameRE.MatchString(k):
				p.add(f+".vars."+k, "variable name %q is not valid; use letters, digits and '_', not starting with a digit", k)
			case strings.HasPrefix(k, "MYTHEX_"):
				p.add(f+".vars."+k, "the MYTHEX_ prefix is reserved for variables mythex sets; rename it")
			}
		}
	}
}

func oneOf(p *problems, field, got string, allowed ...string) {
	if !slices.Contains(allowed, got) {
		p.add(field, "must be one of %v, got %q", allowed, got)
	}
}

func positive(p *problems, field string, d interface{ Seconds() float64 }) {
	if d.Seconds() <= 0 {
		p.add(field, "must be more than 0, got %v; set a duration like 5s", d)
	}
}

func notNegative(p *problems, field string, d interface{ Seconds() float64 }) {
	if d.Seconds() < 0 {
		p.add(field, "must be 0 or more, got %v", d)
	}
}

func atLeast(p *problems, field string, got, low int) {
	if got < low {
		p.add(field, "must be at least %d, got %d", low, got)
	}
}

func hostPort(p *problems, field, addr string) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		p.add(field, "must be host:port like 127.0.0.1:8080, got %q", addr)
	}
}

// sshHost is the host[:port] of hosts[].ssh, without the user.
func sshHost(s string) string {
	if i := strings.LastIndex(s, "@"); i >= 0 {
		return s[i+1:]
	}
	return s
}

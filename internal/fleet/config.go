// Package fleet holds the model of mythex.yml: the hosts of a fleet, the load
// balancer in front of them, the drain protocol of the services behind it, the
// watchdog on each host and the rolling deploy. It loads and validates the file;
// it does not act on it.
//
// Durations in the file are Go duration strings ("5s", "150s"); in code they are
// time.Duration. Every field documents its default and unit; defaults live in one
// place, Default.
package fleet

import "time"

// Config is the whole of mythex.yml.
type Config struct {
	// Hosts are the servers of the fleet, deployed to in this order. Required for
	// lb, deploy and demo; `mythex check` needs none.
	Hosts []Host `yaml:"hosts"`
	// LoadBalancer is the target group in front of the hosts. Required.
	LoadBalancer LoadBalancer `yaml:"load_balancer" mythex:"required"`
	// Drain is how a service leaves rotation. Required.
	Drain Drain `yaml:"drain" mythex:"required"`
	// Backend describes the services behind the load balancer. Required.
	Backend Backend `yaml:"backend" mythex:"required"`
	// Watchdog is the self-healing loop of each host agent.
	Watchdog Watchdog `yaml:"watchdog"`
	// Deploy is the rolling deploy.
	Deploy Deploy `yaml:"deploy"`
	// Timing holds the bounds `mythex check` uses beyond the numbers above.
	Timing Timing `yaml:"timing"`
	// AgentTLS, when set, reaches every agent not reached over SSH with TLS
	// 1.3 and a client certificate (agents run with --tls-cert, --tls-key,
	// --client-ca). Paths are relative to mythex.yml. Default: none.
	AgentTLS *AgentTLS `yaml:"agent_tls"`
}

// AgentTLS are the deployer's files for agents served over TLS; make them
// with `mythex certs init` and `mythex certs issue`.
type AgentTLS struct {
	// CAFile is the CA that signed the agents' certificates. Required.
	CAFile string `yaml:"ca_file" mythex:"required"`
	// CertFile is the deployer's client certificate. Required.
	CertFile string `yaml:"cert_file" mythex:"required"`
	// KeyFile is the deployer's client key. Required.
	KeyFile string `yaml:"key_file" mythex:"required"`
	// ServerName is the name checked against every agent's certificate.
	// Default: the host part of hosts[].agent.
	ServerName string `yaml:"server_name"`
}

// Host is one server of the fleet.
type Host struct {
	// Name identifies the host in output and in the load balancer. Required, unique.
	Name string `yaml:"name" mythex:"required"`
	// Target is the host:port the load balancer routes to (the gateway service).
	// Required, unique.
	Target string `yaml:"target" mythex:"required"`
	// Agent is the host:port of the host agent's API. Required by deploy.
	// With SSH it is the address as the host itself sees it (the agent's
	// loopback listener, e.g. 127.0.0.1:9200).
	Agent string `yaml:"agent"`
	// TargetID is the host's target id in an ALB target group (kind alb): the
	// EC2 instance id (i-…) for target_type instance, the IP address for ip.
	// The port is Target's. Default: the host part of Target.
	TargetID string `yaml:"target_id"`
	// Server is this host's server name in the HAProxy backend (kind
	// haproxy; the name on its `server` line in haproxy.cfg). Default: Name.
	Server string `yaml:"server"`
	// SSH is "user@host[:port]" of the host's sshd: mythex reaches the agent
	// through one SSH connection (host key checked against known_hosts) and
	// the agent stays on loopback. Default: none (the agent address is dialled
	// directly, which beyond loopback needs agent_tls or --insecure-plaintext).
	SSH string `yaml:"ssh"`
	// Vars are this host's compose interpolation variables: the compose file
	// (deploy.compose) uses ${NAME} for what differs per host, e.g. ports when
	// several hosts share one machine. Names are letters, digits and '_'; the
	// MYTHEX_ prefix is reserved. Default none.
	Vars map[string]string `yaml:"vars"`
}

// LB kinds: which load balancer the fleet sits behind.
const (
	// KindEmbedded is `mythex lb`, with ALB target-group semantics.
	KindEmbedded = "embedded"
	// KindHAProxy is an HAProxy backend.
	KindHAProxy = "haproxy"
	// KindALB is an AWS Application Load Balancer; its documented ranges apply.
	KindALB = "alb"
	// KindOther is any other proxy in front of the services (ingress-nginx,
	// Traefik, a Docker Swarm routing mesh) that mythex neither runs nor
	// queries: `mythex check` judges its timing from propagation_margin and
	// applies no vendor's ranges or rules.
	KindOther = "other"
)

// Routing algorithms of a target group (ALB load_balancing.algorithm.type).
const (
	// AlgorithmRoundRobin routes to the targets in rotation in turn.
	AlgorithmRoundRobin = "round_robin"
	// AlgorithmLeastOutstandingRequests routes to the target with the fewest
	// requests in flight.
	AlgorithmLeastOutstandingRequests = "least_outstanding_requests"
)

// Target types, as in an ALB target group.
const (
	// TargetTypeInstance registers the node (host) and routes to a port on it;
	// removing one service does not deregister anything, so the deregistration
	// delay does not govern how fast a single service leaves rotation.
	TargetTypeInstance = "instance"
	// TargetTypeIP registers the service's own address; deregistering it is what
	// takes it out of rotation, after the LB's propagation delay.
	TargetTypeIP = "ip"
)

// LoadBalancer is the load balancer's listener and target group. Field names and
// defaults follow an AWS ALB target group.
type LoadBalancer struct {
	// Kind is embedded, haproxy, alb or other. Default embedded.
	Kind string `yaml:"kind"`
	// Listen is the address the embedded LB serves traffic on. Default 127.0.0.1:8080.
	Listen string `yaml:"listen"`
	// AdminListen is the address of the embedded LB's admin API. Default
	// 127.0.0.1:8079; it must stay on loopback unless AdminToken is set and the
	// operator means it.
	AdminListen string `yaml:"admin_listen"`
	// AdminTokenFile is a file holding the admin API's bearer token. Default: the
	// token comes from $MYTHEX_LB_TOKEN.
	AdminTokenFile string `yaml:"admin_token_file"`
	// TargetType is instance or ip, as in an ALB target group. Default instance.
	TargetType string `yaml:"target_type"`
	// HealthCheck is the target group's active health check.
	HealthCheck HealthCheck `yaml:"health_check"`
	// DeregistrationDelay is how long a deregistered target may keep serving its
	// in-flight requests (state draining) before it is cut off. ALB default 300s,
	// range 0–3600s.
	DeregistrationDelay time.Duration `yaml:"deregistration_delay"`
	// IdleTimeout is how long the LB keeps an idle client or backend connection
	// open. ALB default 60s.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// Algorithm is how the embedded LB picks among targets in rotation, as an ALB
	// target group's load_balancing.algorithm.type: round_robin or
	// least_outstanding_requests. Default round_robin (ALB's default).
	Algorithm string `yaml:"algorithm"`
	// TargetGroupARN is the ALB target group's ARN (kind alb). Required for
	// kind alb; for the embedded LB it names the target group its ELBv2
	// endpoint answers for. Default for embedded:
	// arn:aws:elasticloadbalancing:REGION:123456789012:targetgroup/mythex/6d79746865786c62.
	TargetGroupARN string `yaml:"target_group_arn"`
	// Region is the AWS region of the target group (kind alb). Default: the
	// ARN's region.
	Region string `yaml:"region"`
	// Endpoint is the ELBv2 API endpoint URL (kind alb), e.g. the embedded
	// LB's admin address for a rehearsal. Default: the SDK's (the region's
	// public endpoint, or $AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2).
	Endpoint string `yaml:"endpoint"`
	// PropagationMargin is added to the time the LB needs to stop routing to a
	// target: the control-plane delay of a real ALB (typically 10–15s), or the
	// discovery lag of kind other (a poll interval, an endpoint update). Default
	// 15s for alb, 0 otherwise.
	PropagationMargin time.Duration `yaml:"propagation_margin"`
	// PropagationMax is the longest the LB has been seen to take to stop
	// routing, where that is longer than PropagationMargin: AWS gives no bound
	// for an ALB and reports see 40 s and more. Between the two, `mythex check`
	// calls overlap marginal instead of passing it. Default 0: the same as
	// PropagationMargin. When set it must be at least PropagationMargin.
	PropagationMax time.Duration `yaml:"propagation_max"`
	// RuntimeAPI is HAProxy's Runtime API (kind haproxy): "unix:/path" of a
	// `stats socket ... level admin`, or "tcp:host:port". Required for kind
	// haproxy.
	RuntimeAPI string `yaml:"runtime_api"`
	// Backend is the HAProxy backend whose servers are the fleet's hosts
	// (kind haproxy). Required for kind haproxy.
	Backend string `yaml:"backend"`
	// ConfigFile is the path of haproxy.cfg (kind haproxy), read — never
	// written — by `mythex check --live` for what the Runtime API does not
	// expose (inter, timeout check). Optional; relative to mythex.yml.
	ConfigFile string `yaml:"config_file"`
}

// HealthCheck is an active HTTP health check, as in an ALB target group.
type HealthCheck struct {
	// Path is the HTTP path checked. Default /healthz.
	Path string `yaml:"path"`
	// Interval is the time between two checks of one target. ALB default 30s,
	// range 5–300s.
	Interval time.Duration `yaml:"interval"`
	// Timeout is how long one check may take before it counts as failed. ALB
	// default 5s, range 2–120s, and it must be less than Interval.
	Timeout time.Duration `yaml:"timeout"`
	// HealthyThreshold is the consecutive successes that make a target healthy.
	// ALB default 5, range 2–10.
	HealthyThreshold int `yaml:"healthy_threshold"`
	// UnhealthyThreshold is the consecutive failures that make a target
	// unhealthy. ALB default 2, range 2–10.
	UnhealthyThreshold int `yaml:"unhealthy_threshold"`
}

// Drain is how a service leaves rotation: after termination starts it answers its
// health check with 503 and keeps serving real traffic for ServePeriod, then shuts
// down gracefully within ShutdownTimeout.
type Drain struct {
	// PreStop is a wait before the service is even told to drain (a Kubernetes
	// preStop sleep); it counts inside the stop grace period. Default 0.
	PreStop time.Duration `yaml:"pre_stop"`
	// ServePeriod (D) is how long real traffic is still served after the health
	// check starts failing. Required; 0 describes a service that stops
	// accepting connections as soon as it gets SIGTERM.
	ServePeriod time.Duration `yaml:"serve_period" mythex:"required"`
	// ShutdownTimeout (S) bounds the graceful shutdown after ServePeriod:
	// in-flight requests get this long to finish. Required.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout" mythex:"required"`
	// Max (M) is the longest a deploy lets one host drain. Default 150s.
	Max time.Duration `yaml:"max"`
}

// Backend describes the services behind the load balancer.
type Backend struct {
	// KeepAliveIdleTimeout is how long a service keeps an idle keep-alive
	// connection open. It must exceed the LB's IdleTimeout. Required.
	KeepAliveIdleTimeout time.Duration `yaml:"keepalive_idle_timeout" mythex:"required"`
	// StopGracePeriod (G) is the time from SIGTERM to SIGKILL (compose
	// stop_grace_period; Docker default 10s). Default 10s.
	StopGracePeriod time.Duration `yaml:"stop_grace_period"`
	// LongestRequest is the longest a request to the service may take; in-flight
	// requests are cut when the drain leaves less than this before SIGKILL.
	// Default 0 (not checked beyond ShutdownTimeout).
	LongestRequest time.Duration `yaml:"longest_request"`
}

// Watchdog is the host agent's self-healing loop.
type Watchdog struct {
	// Interval (W) is the time between two rounds. Default 60s.
	Interval time.Duration `yaml:"interval"`
	// FailuresBeforeHeal (K) is the consecutive failed checks before a service is
	// healed. Default 4; one is never enough.
	FailuresBeforeHeal int `yaml:"failures_before_heal"`
}

// Drain modes: how a deploy takes a host out of rotation.
const (
	// DrainModeDeregister deregisters the target through the LB admin API, waits
	// until the LB reports it out of rotation, then stops the services.
	DrainModeDeregister = "deregister"
	// DrainModeHealth flips the service's health endpoint (SIGTERM → 503) and
	// waits until the LB's health checks take it out of rotation.
	DrainModeHealth = "health"
	// DrainModeBoth deregisters and flips health.
	DrainModeBoth = "both"
)

// Deploy is the rolling deploy.
type Deploy struct {
	// BatchSize is how many hosts are deployed at once. Default 1.
	BatchSize int `yaml:"batch_size"`
	// Verify lists the services checked on every host before a deploy may
	// succeed. Default: every service of the definition.
	Verify []string `yaml:"verify"`
	// DrainMode is deregister, health or both. Default both.
	DrainMode string `yaml:"drain_mode"`
	// Compose is the path of the one compose file that defines what a host runs,
	// relative to mythex.yml. Required by deploy.
	Compose string `yaml:"compose"`
	// LeaseTTL is how long a host lease lives without renewal; if the deploy
	// dies, the host returns to its last good state after this. Default 30s;
	// at most 1h (MaxLeaseTTL).
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	// MinHealthyTime is how long every service of Verify must stay up — the
	// same instance, no exit, the load balancer reporting the target healthy
	// throughout — before a host counts as verified: "look twice", as Nomad's
	// update.min_healthy_time. Default 10s (Nomad's); 0 looks once.
	MinHealthyTime time.Duration `yaml:"min_healthy_time"`
	// MinInService is how many targets must stay healthy and in rotation
	// outside a batch before the deploy drains it: a count ("1") or a
	// percentage of the fleet's hosts, rounded up ("50%"), as ECS's
	// minimumHealthyPercent. Default "1". See InService.
	MinInService string `yaml:"min_in_service"`
	// TargetServices are the services of the compose file the load balancer
	// routes to: their health check is flipped to 503 in drain modes health
	// and both. Default ["gateway"].
	TargetServices []string `yaml:"target_services"`
	// Hooks are commands run around a deploy. Default none.
	Hooks Hooks `yaml:"hooks"`
}

// Hooks are argv lists (never a shell string) run around a deploy with
// MYTHEX_VERSION, MYTHEX_RESULT, MYTHEX_HOSTS and MYTHEX_HOOK in their
// environment, e.g. ["curl", "-fsS", "-d", "deployed", "https://chat.example/hook"].
type Hooks struct {
	// PreDeploy runs before anything changes; if it fails the deploy does
	// not start (exit 2).
	PreDeploy []string `yaml:"pre_deploy"`
	// PostDeploy runs after a deploy verified on every host.
	PostDeploy []string `yaml:"post_deploy"`
	// OnFailure runs after a deploy failed.
	OnFailure []string `yaml:"on_failure"`
	// OnRollback runs after a deploy that rolled hosts back.
	OnRollback []string `yaml:"on_rollback"`
	// Timeout bounds each hook; it is interrupted, then killed. Default 30s.
	Timeout time.Duration `yaml:"timeout"`
}

// MaxLeaseTTL is the longest deploy.lease_ttl: a dead deploy's host must
// come back to its last good version within the hour.
const MaxLeaseTTL = time.Hour

// Timing holds the bounds `mythex check` holds the numbers to.
type Timing struct {
	// QuickReturnMax bounds healthy threshold × interval: how long a new version
	// waits to come back into rotation. Default 30s.
	QuickReturnMax time.Duration `yaml:"quick_return_max"`
	// Margin is extra headroom required by the overlap and grace invariants.
	// Default 0.
	Margin time.Duration `yaml:"margin"`
}

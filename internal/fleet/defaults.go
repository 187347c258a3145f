package fleet

import "time"

// Default returns a Config holding every default of mythex.yml; Load decodes the
// file over it. ALB defaults follow the AWS target-group documentation, the stop
// grace period Docker's 10s stop timeout, the watchdog and drain max the seed
// write-up's numbers.
func Default() Config {
	return Config{
		LoadBalancer: LoadBalancer{
			Kind:        KindEmbedded,
			Listen:      "127.0.0.1:8080",
			AdminListen: "127.0.0.1:8079",
			TargetType:  TargetTypeInstance,
			Algorithm:   AlgorithmRoundRobin,
			HealthCheck: HealthCheck{
				Path:               "/healthz",
				Interval:           30 * time.Second,
				Timeout:            5 * time.Second,
				HealthyThreshold:   5,
				UnhealthyThreshold: 2,
			},
			DeregistrationDelay: 300 * time.Second,
			IdleTimeout:         60 * time.Second,
		},
		Drain:    Drain{Max: 150 * time.Second},
		Backend:  Backend{StopGracePeriod: 10 * time.Second},
		Watchdog: Watchdog{Interval: 60 * time.Second, FailuresBeforeHeal: 4},
		Deploy: Deploy{
			BatchSize: 1,
			DrainMode: DrainModeBoth,
			LeaseTTL:  30 * time.Second,
			// Nomad's update.min_healthy_time default.
			MinHealthyTime: 10 * time.Second,
			MinInService:   "1",
			TargetServices: []string{"gateway"},
		},
		Timing: Timing{QuickReturnMax: 30 * time.Second},
	}
}

// albPropagationDefault is the control-plane delay assumed for a real ALB when
// the file does not set propagation_margin (AWS reports 10–15s typical).
const albPropagationDefault = 15 * time.Second

// finish applies the defaults that depend on other fields.
func (c *Config) finish(set map[string]bool) {
	if c.LoadBalancer.Kind == KindALB && !set["load_balancer.propagation_margin"] {
		c.LoadBalancer.PropagationMargin = albPropagationDefault
	}
}

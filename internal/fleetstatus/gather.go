package fleetstatus

import (
	"context"
	"time"

	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/fleetlb"
)

// Gather connects to every agent of cfg through pool (SSH handshakes in
// parallel), makes one round of calls bounded by timeout, and judges it.
// lb may be nil when the load balancer cannot be read by mythex.
func Gather(ctx context.Context, cfg *fleet.Loaded, agentToken string, lb lbport.Driver, pool *agentconn.Pool, timeout time.Duration) Verdict {
	hosts := make([]Host, len(cfg.Hosts))
	dialCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan struct{}, len(cfg.Hosts))
	for i, h := range cfg.Hosts {
		hosts[i] = Host{Name: h.Name, Target: fleetlb.Ref(cfg.LoadBalancer, h)}
		go func() {
			defer func() { done <- struct{}{} }()
			c, err := pool.Connect(dialCtx, cfg, h, agentToken)
			if err != nil {
				hosts[i].AgentErr = err
				return
			}
			hosts[i].Agent = c
		}()
	}
	for range cfg.Hosts {
		<-done
	}
	return Judge(Collect(ctx, hosts, lb, timeout), time.Now())
}

package demo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/fleetstatus"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/embedded"
	"github.com/mythex/mythex/internal/lbport/fleetlb"
	"github.com/mythex/mythex/internal/lbport/haproxy/deploylb"
)

// statusTimeout bounds the demo's closing `mythex status` round.
const statusTimeout = 5 * time.Second

// Status is what `mythex status` says of the fleet: one round of calls to
// every agent and the load balancer, in parallel, judged (fleetstatus).
func (f *Fleet) Status(ctx context.Context) fleetstatus.Verdict {
	pool := agentconn.NewPool(agentconn.Options{Timeout: statusTimeout})
	defer pool.Close()
	return fleetstatus.Gather(ctx, f.Loaded, f.AgentToken, f.statusLB(ctx), pool, statusTimeout)
}

// statusLB is the driver status reads the fleet's load balancer through;
// nil when it cannot be opened (status then shows no LB column).
func (f *Fleet) statusLB(ctx context.Context) lbport.Driver {
	switch f.Loaded.LoadBalancer.Kind {
	case fleet.KindHAProxy:
		if d, err := deploylb.NewDriver(f.Loaded); err == nil {
			return d
		}
	case fleet.KindALB:
		creds := credentials.NewStaticCredentialsProvider(f.ELBv2Key.AccessKeyID, f.ELBv2Key.SecretAccessKey, "")
		if d, err := fleetlb.Open(ctx, f.Loaded.LoadBalancer, fleetlb.Options{Credentials: creds}); err == nil {
			return d
		}
	default:
		return embedded.New(f.lbClient())
	}
	return nil
}

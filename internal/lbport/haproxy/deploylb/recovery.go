package deploylb

import (
	"context"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/fleetlb"
)

// RecoveryDriver is the load balancer, and host h's target in it, through
// which h's agent registers h again when a deploy's lease runs out (the
// deploy died with h drained). Embedded: its admin API, with the token
// embeddedToken returns. ALB: the host's own AWS credentials (instance
// role). HAProxy: its Runtime API, the server set ready again; none without
// load_balancer.runtime_api. Other kinds: none (nil driver, nil error).
func RecoveryDriver(ctx context.Context, cfg *fleet.Loaded, h fleet.Host, embeddedToken func() (string, error)) (lbport.Driver, lbport.TargetRef, error) {
	ref := fleetlb.Ref(cfg.LoadBalancer, h)
	switch cfg.LoadBalancer.Kind {
	case fleet.KindHAProxy:
		if cfg.LoadBalancer.RuntimeAPI == "" {
			return nil, ref, nil
		}
		d, err := NewDriver(cfg)
		if err != nil {
			return nil, ref, err
		}
		return LB{Driver: d, Targets: map[string]string{h.Name: h.Target}}, ref, nil
	case fleet.KindEmbedded, fleet.KindALB:
		var o fleetlb.Options
		if cfg.LoadBalancer.Kind == fleet.KindEmbedded {
			tok, err := embeddedToken()
			if err != nil {
				return nil, ref, err
			}
			o.EmbeddedToken = tok
		}
		d, err := fleetlb.Open(ctx, cfg.LoadBalancer, o)
		return d, ref, err
	}
	return nil, ref, nil
}

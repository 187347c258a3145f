package deploy

import (
	"context"
	"errors"
	"fmt"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lb"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/fleetlb"
)

// ForFleet builds the Options of a deploy of version to every host of cfg:
// the one definition (deploy.compose) resolved for each host, an agent client
// per host (hosts[].agent), the embedded load balancer's admin API and its
// listener as the front. The caller sets Holder, Observer and
// TargetServices. Errors: a *fleet.FieldError or *definition.FieldError
// (matching fleet.ErrInvalid) for a config the deploy cannot use.
func ForFleet(ctx context.Context, cfg *fleet.Loaded, version, agentToken, lbToken string) (Options, error) {
	if cfg.LoadBalancer.Kind != fleet.KindEmbedded && cfg.LoadBalancer.Kind != fleet.KindALB {
		return Options{}, &fleet.FieldError{File: cfg.Path, Field: "load_balancer.kind",
			Msg: fmt.Sprintf("%q: deploy drives the embedded load balancer (mythex lb) and ALB target groups (alb); its API is what proves a target out of rotation", cfg.LoadBalancer.Kind)}
	}
	if len(cfg.Hosts) == 0 {
		return Options{}, &fleet.FieldError{File: cfg.Path, Field: "hosts", Msg: "no hosts: list the servers to deploy to"}
	}
	o := Options{
		Config:  &cfg.Config,
		Version: version,
		LB:      EmbeddedLB{Client: lb.NewClient("http://"+cfg.LoadBalancer.AdminListen, lbToken, nil)},
		Front:   &HTTPFront{URL: "http://" + cfg.LoadBalancer.Listen + "/"},
		Verify:  cfg.Deploy.Verify,
	}
	if cfg.LoadBalancer.Kind == fleet.KindALB {
		lbo, err := albLB(ctx, cfg, fleetlb.Options{})
		if err != nil {
			return Options{}, err
		}
		o.LB, o.Poll = lbo, lbport.DefaultPollInterval
	}
	for i, h := range cfg.Hosts {
		if h.Agent == "" {
			return Options{}, &fleet.FieldError{File: cfg.Path, Field: fmt.Sprintf("hosts[%d].agent", i),
				Msg: "is not set: deploy needs every host's agent address (host:port of mythex agent)"}
		}
		d, err := definition.ForHost(ctx, cfg, h.Name, version)
		if err != nil {
			return Options{}, err
		}
		b, err := d.Encode()
		if err != nil {
			return Options{}, err
		}
		o.Hosts = append(o.Hosts, Host{Name: h.Name, Target: h.Target, Agent: agentapi.NewClient(h.Agent, agentToken, nil), Definition: b})
	}
	return o, nil
}

// ALBLB builds the deploy's LB for a kind alb fleet: the alb driver
// (credentials from lo, or the AWS SDK's default chain), each host's target
// (hosts[].target_id and the port of hosts[].target) and the propagation
// grace (load_balancer.propagation_margin). A deploy in drain_mode health is
// refused: an ALB does not report requests in flight, so only a
// deregistration can prove a target out.
func ALBLB(ctx context.Context, cfg *fleet.Loaded, lo fleetlb.Options) (*PortLB, error) {
	return albLB(ctx, cfg, lo)
}

func albLB(ctx context.Context, cfg *fleet.Loaded, lo fleetlb.Options) (*PortLB, error) {
	if cfg.Deploy.DrainMode == fleet.DrainModeHealth {
		return nil, &fleet.FieldError{File: cfg.Path, Field: "deploy.drain_mode",
			Msg: "health cannot prove an ALB target drained (its API does not report requests in flight); use deregister or both"}
	}
	d, err := fleetlb.Open(ctx, cfg.LoadBalancer, lo)
	if err != nil {
		var fe *fleet.FieldError
		if errors.As(err, &fe) && fe.File == "" {
			fe.File = cfg.Path
		}
		return nil, err
	}
	p := &PortLB{D: d, Refs: map[string]lbport.TargetRef{}, Grace: cfg.LoadBalancer.PropagationMargin}
	for _, h := range cfg.Hosts {
		p.Refs[h.Name] = fleetlb.Ref(cfg.LoadBalancer, h)
	}
	return p, nil
}

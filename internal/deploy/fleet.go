package deploy

import (
	"context"
	"fmt"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lb"
)

// ForFleet builds the Options of a deploy of version to every host of cfg:
// the one definition (deploy.compose) resolved for each host, an agent client
// per host (hosts[].agent), the embedded load balancer's admin API and its
// listener as the front. The caller sets Holder, Observer and
// TargetServices. Errors: a *fleet.FieldError or *definition.FieldError
// (matching fleet.ErrInvalid) for a config the deploy cannot use.
func ForFleet(ctx context.Context, cfg *fleet.Loaded, version, agentToken, lbToken string) (Options, error) {
	if cfg.LoadBalancer.Kind != fleet.KindEmbedded {
		return Options{}, &fleet.FieldError{File: cfg.Path, Field: "load_balancer.kind",
			Msg: fmt.Sprintf("%q: deploy drives the embedded load balancer (mythex lb) only for now; its admin API is what proves a target out of rotation", cfg.LoadBalancer.Kind)}
	}
	if len(cfg.Hosts) == 0 {
		return Options{}, &fleet.FieldError{File: cfg.Path, Field: "hosts", Msg: "no hosts: list the servers to deploy to"}
	}
	if err := CheckCompose(ctx, cfg); err != nil {
		return Options{}, err
	}
	o := Options{
		Config:  &cfg.Config,
		Version: version,
		LB: EmbeddedLB{Client: lb.NewClient("http://"+cfg.LoadBalancer.AdminListen, lbToken, nil),
			HealthyThreshold: cfg.LoadBalancer.HealthCheck.HealthyThreshold},
		Front:  &HTTPFront{URL: "http://" + cfg.LoadBalancer.Listen + "/"},
		Verify: cfg.Deploy.Verify,
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
		if err := CheckServices(cfg, h.Name, d); err != nil {
			return Options{}, err
		}
		b, err := d.Encode()
		if err != nil {
			return Options{}, err
		}
		o.Hosts = append(o.Hosts, Host{Name: h.Name, Target: h.Target, Agent: agentapi.NewClient(h.Agent, agentToken, nil), Definition: b, Local: isLocal(h.Agent)})
	}
	return o, nil
}

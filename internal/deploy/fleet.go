package deploy

import (
	"context"
	"errors"
	"fmt"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/fleetlb"
)

// ForFleet builds the Options of a deploy of version to every host of cfg:
// the one definition (deploy.compose) resolved for each host, an agent client
// per host reached through agents (hosts[].ssh, agent_tls or hosts[].agent
// on loopback; every host is connected before ForFleet returns, in
// parallel, so a refused host key stops the deploy before anything
// changes), the load balancer's driver (kind embedded: its
// admin API with lbToken; kind alb: the ELBv2 API with the AWS SDK's default
// credentials, polled every 2 s; drain_mode health refused) and its listener
// as the front. The caller sets Holder, Observer and
// TargetServices. Errors: a *fleet.FieldError or *definition.FieldError
// (matching fleet.ErrInvalid) for a config the deploy cannot use;
// ErrPreflight for a host that cannot be connected to.
func ForFleet(ctx context.Context, cfg *fleet.Loaded, version, agentToken, lbToken string, agents Connector) (Options, error) {
	if cfg.LoadBalancer.Kind != fleet.KindEmbedded && cfg.LoadBalancer.Kind != fleet.KindALB {
		return Options{}, &fleet.FieldError{File: cfg.Path, Field: "load_balancer.kind",
			Msg: fmt.Sprintf("%q: deploy drives the embedded load balancer (mythex lb) and ALB target groups (alb); its API is what proves a target out of rotation", cfg.LoadBalancer.Kind)}
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
		Front:   &HTTPFront{URL: "http://" + cfg.LoadBalancer.Listen + "/"},
		Verify:  cfg.Deploy.Verify,
	}
	if cfg.LoadBalancer.Kind == fleet.KindALB {
		if cfg.Deploy.DrainMode == fleet.DrainModeHealth {
			return Options{}, &fleet.FieldError{File: cfg.Path, Field: "deploy.drain_mode",
				Msg: "health cannot prove an ALB target drained (its API does not report requests in flight); use deregister or both"}
		}
		o.Poll = lbport.DefaultPollInterval
	}
	d, err := fleetlb.Open(ctx, cfg.LoadBalancer, fleetlb.Options{EmbeddedToken: lbToken})
	if err != nil {
		var fe *fleet.FieldError
		if errors.As(err, &fe) && fe.File == "" {
			fe.File = cfg.Path
		}
		return Options{}, err
	}
	o.LB = d
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
		o.Hosts = append(o.Hosts, Host{Name: h.Name, Target: h.Target, Ref: fleetlb.Ref(cfg.LoadBalancer, h), Definition: b, Local: isLocal(h.Agent) && h.SSH == ""})
	}
	clients, err := ConnectAll(ctx, cfg, agentToken, agents)
	if err != nil {
		return Options{}, err
	}
	for i, c := range clients {
		o.Hosts[i].Agent = c
	}
	return o, nil
}

package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mythex/mythex/internal/agent"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/haproxy/deploylb"
)

// deployOptions builds the deploy of cfg for its load balancer's kind: the
// embedded LB through its admin API, HAProxy through its Runtime API (after
// a preflight that changes nothing: socket at level admin, version,
// backend, servers, checks); the agents through agents. Warnings go to
// errOut.
func deployOptions(ctx context.Context, cfg *fleet.Loaded, version, agentToken, lbToken string, agents deploy.Connector, errOut io.Writer) (deploy.Options, error) {
	if cfg.LoadBalancer.Kind != fleet.KindHAProxy {
		return deploy.ForFleet(ctx, cfg, version, agentToken, lbToken, agents)
	}
	o, rep, err := deploylb.ForFleet(ctx, cfg, version, agentToken, agents)
	if err != nil {
		return o, err
	}
	if len(rep.NoCheck) > 0 {
		fmt.Fprintf(errOut, "warning: HAProxy has no health check for %s (`check` missing on the server line): only the drain (state drain) takes it out of rotation, and it is back in rotation the moment it is set ready\n",
			strings.Join(rep.NoCheck, ", "))
	}
	return o, nil
}

// haproxyRecovery is the agent's lease-expiry recovery behind HAProxy: once
// the host is back on its last good definition, its server is set ready
// again through the Runtime API (a deploy that died mid-host left it
// drained). Without load_balancer.runtime_api there is none.
func haproxyRecovery(cfg *fleet.Loaded, h fleet.Host) (agent.Recovery, error) {
	if cfg.LoadBalancer.RuntimeAPI == "" {
		return agent.Recovery{}, nil
	}
	d, err := deploylb.NewDriver(cfg)
	if err != nil {
		return agent.Recovery{}, err
	}
	return agent.Recovery{LB: deploylb.LB{Driver: d, Targets: map[string]string{h.Name: h.Target}}, TargetID: h.Name, TargetAddress: h.Target}, nil
}

// haproxyStatusDriver is the driver `mythex status` reads HAProxy through.
func haproxyStatusDriver(cfg *fleet.Loaded) (lbport.Driver, error) {
	d, err := deploylb.NewDriver(cfg)
	if err != nil {
		return nil, err
	}
	return d, nil
}

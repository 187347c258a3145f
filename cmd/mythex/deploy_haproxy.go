package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
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

package deploy

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/fleet"
)

// Connector reaches the agent of one host of a fleet. *agentconn.Pool
// implements it: over SSH when hosts[].ssh is set (one connection per host,
// its host key checked against known_hosts), TLS with a client certificate
// when agent_tls is set, plain HTTP on loopback, and beyond loopback only
// with --insecure-plaintext. The caller owns it and closes it after the
// deploy.
type Connector interface {
	Connect(ctx context.Context, cfg *fleet.Loaded, h fleet.Host, token string) (*agentapi.Client, error)
}

// ConnectAll connects to every host of cfg in parallel and returns their
// clients in host order. Any failure — a refused or unknown host key, a
// login refused, an unreachable host, plain HTTP refused — is an error
// wrapping ErrPreflight that names every host that failed: nothing has been
// changed on any host yet.
func ConnectAll(ctx context.Context, cfg *fleet.Loaded, token string, agents Connector) ([]*agentapi.Client, error) {
	if agents == nil {
		return nil, fmt.Errorf("%w: no way to reach the agents (a nil Connector)", ErrPreflight)
	}
	clients := make([]*agentapi.Client, len(cfg.Hosts))
	errs := make([]error, len(cfg.Hosts))
	var wg sync.WaitGroup
	for i, h := range cfg.Hosts {
		wg.Go(func() { clients[i], errs[i] = agents.Connect(ctx, cfg, h, token) })
	}
	wg.Wait()
	// One config error (unreadable agent_tls files) fails every host alike:
	// say it once.
	seen := map[string]bool{}
	var failed []error
	for _, err := range errs {
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			failed = append(failed, err)
		}
	}
	if err := errors.Join(failed...); err != nil {
		return nil, fmt.Errorf("%w, nothing was changed: %w", ErrPreflight, err)
	}
	return clients, nil
}

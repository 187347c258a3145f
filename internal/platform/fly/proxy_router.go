package fly

import (
	"context"
	"errors"
	"fmt"

	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/platform"
)

// ProxyRouter is the publish gate's load balancer over Fly Proxy: a
// machine created with skip_service_registration is registered by
// uncordoning it and taken out of routing by cordoning it, as flyctl's
// blue-green deploy does. In rotation means started, not cordoned, and every
// check of the machine passing. Fly does not report requests in flight, so a
// drain waits only for the cordon.
type ProxyRouter struct {
	c   *Client
	app string
}

// NewProxyRouter is app's Fly Proxy as a load balancer, driven through c.
func NewProxyRouter(c *Client, app string) ProxyRouter { return ProxyRouter{c: c, app: app} }

var _ lbport.Driver = ProxyRouter{}

// Kind is "fly".
func (r ProxyRouter) Kind() string { return "fly" }

// Register uncordons the machine; the address is not needed (the proxy
// finds the machine by id).
func (r ProxyRouter) Register(ctx context.Context, t lbport.TargetRef) error {
	return r.c.Uncordon(ctx, r.app, t.ID)
}

// Deregister cordons the machine; an unknown machine is not an error.
func (r ProxyRouter) Deregister(ctx context.Context, t lbport.TargetRef) error {
	err := r.c.Cordon(ctx, r.app, t.ID)
	if errors.Is(err, platform.ErrNotFound) {
		return nil
	}
	return err
}

// Describe reports each machine's routing, one Fly call per machine: a
// cordoned machine still started is draining, a cordoned stopped one or an
// unknown one unused, an uncordoned one healthy when started with its checks
// passing and initial otherwise. In flight is 0: Fly does not report it.
func (r ProxyRouter) Describe(ctx context.Context, ts ...lbport.TargetRef) ([]lbport.Target, error) {
	out := make([]lbport.Target, 0, len(ts))
	for _, t := range ts {
		cordoned, state, pass, err := r.c.Routing(ctx, r.app, t.ID)
		tg := lbport.Target{ID: t.ID, Address: t.Address}
		switch {
		case errors.Is(err, platform.ErrNotFound):
			tg.State, tg.Reason = lbport.StateUnused, lbport.ReasonNotRegistered
		case err != nil:
			return nil, err
		case cordoned && state == platform.StateStarted:
			tg.State, tg.Reason = lbport.StateDraining, lbport.ReasonDeregistrationInProgress
		case cordoned:
			tg.State, tg.Reason = lbport.StateUnused, lbport.ReasonNotRegistered
		case state == platform.StateStarted && pass:
			tg.State, tg.InRotation = lbport.StateHealthy, true
		default:
			tg.State, tg.Reason = lbport.StateInitial, lbport.ReasonInitialHealthChecking
		}
		out = append(out, tg)
	}
	return out, nil
}

// Settings cannot be read: Fly checks live in fly.toml.
func (r ProxyRouter) Settings(context.Context) (lbport.Settings, error) {
	return lbport.Settings{}, fmt.Errorf("fly proxy: %w", lbport.ErrUnsupported)
}

// Apply cannot change Fly checks: they live in fly.toml.
func (r ProxyRouter) Apply(context.Context, lbport.Settings) error {
	return fmt.Errorf("fly proxy: %w", lbport.ErrUnsupported)
}

package main

import (
	"context"
	"errors"

	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/platform/fly"
	"github.com/mythex/mythex/internal/publish"
)

// flyProxyRouter is the publish gate's Router over Fly Proxy: a machine
// created with skip_service_registration is registered by uncordoning it and
// taken out of routing by cordoning it, as flyctl's blue-green deploy does.
// In rotation means started, not cordoned, and every check of the machine
// passing. Fly does not report requests in flight, so a drain waits only for
// the cordon.
type flyProxyRouter struct {
	c   *fly.Client
	app string
}

var _ publish.Router = flyProxyRouter{}

// Register implements publish.Router; the address is not needed (the proxy
// finds the machine by id).
func (r flyProxyRouter) Register(ctx context.Context, id, _ string) error {
	return r.c.Uncordon(ctx, r.app, id)
}

// Deregister implements publish.Router; an unknown machine is not an error.
func (r flyProxyRouter) Deregister(ctx context.Context, id string) error {
	err := r.c.Cordon(ctx, r.app, id)
	if errors.Is(err, platform.ErrNotFound) {
		return nil
	}
	return err
}

// Target implements publish.Router.
func (r flyProxyRouter) Target(ctx context.Context, id string) (publish.TargetState, error) {
	cordoned, state, pass, err := r.c.Routing(ctx, r.app, id)
	if errors.Is(err, platform.ErrNotFound) {
		return publish.TargetState{}, nil
	}
	if err != nil {
		return publish.TargetState{}, err
	}
	return publish.TargetState{Registered: !cordoned, Draining: cordoned && state == platform.StateStarted,
		InRotation: !cordoned && state == platform.StateStarted && pass}, nil
}

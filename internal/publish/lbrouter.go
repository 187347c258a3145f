package publish

import (
	"context"
	"errors"
	"fmt"

	"github.com/mythex/mythex/internal/lb"
)

// LBRouter is a Router over the embedded load balancer's admin API
// (`mythex lb`, internal/lb): register, deregister, and the LB's own truth
// about a target (in rotation, requests in flight).
type LBRouter struct {
	// Client talks to the LB's admin API.
	Client *lb.Client
}

var _ Router = LBRouter{}

// Register implements Router. Registering a draining target makes it
// initial again (the LB's contract).
func (r LBRouter) Register(ctx context.Context, id, address string) error {
	if address == "" {
		return fmt.Errorf("machine %s has no address to route to", id)
	}
	_, err := r.Client.Register(ctx, id, address)
	return err
}

// Deregister implements Router; an unknown target is not an error.
func (r LBRouter) Deregister(ctx context.Context, id string) error {
	_, err := r.Client.Deregister(ctx, id)
	if errors.Is(err, lb.ErrTargetNotFound) {
		return nil
	}
	return err
}

// Target implements Router.
func (r LBRouter) Target(ctx context.Context, id string) (TargetState, error) {
	t, err := r.Client.Target(ctx, id)
	if errors.Is(err, lb.ErrTargetNotFound) {
		return TargetState{}, nil
	}
	if err != nil {
		return TargetState{}, err
	}
	return TargetState{Registered: t.State != lb.StateUnused, Draining: t.State == lb.StateDraining,
		InRotation: t.InRotation, InFlight: int(t.InFlight)}, nil
}

package deploy

import (
	"context"
	"errors"

	"github.com/mythex/mythex/internal/lb"
)

// EmbeddedLB is the LB of the deploy over the embedded load balancer's admin
// API (mythex lb).
type EmbeddedLB struct {
	Client *lb.Client
}

var _ LB = EmbeddedLB{}

// Target reports the target; Registered false when the LB does not know it.
func (e EmbeddedLB) Target(ctx context.Context, id string) (TargetView, error) {
	t, err := e.Client.Target(ctx, id)
	if errors.Is(err, lb.ErrTargetNotFound) {
		return TargetView{}, nil
	}
	if err != nil {
		return TargetView{}, err
	}
	return TargetView{
		Registered: t.State.String() != "unused",
		State:      t.State.String(),
		InRotation: t.InRotation,
		InFlight:   int(t.InFlight),
		Reason:     string(t.Reason),
	}, nil
}

// Register registers the target (state initial).
func (e EmbeddedLB) Register(ctx context.Context, id, address string) error {
	_, err := e.Client.Register(ctx, id, address)
	return err
}

// Deregister starts draining the target.
func (e EmbeddedLB) Deregister(ctx context.Context, id string) error {
	_, err := e.Client.Deregister(ctx, id)
	if errors.Is(err, lb.ErrTargetNotFound) {
		return nil
	}
	return err
}

package deploy

import (
	"context"
	"errors"
	"fmt"

	"github.com/mythex/mythex/internal/lb"
)

// EmbeddedLB is the LB of the deploy over the embedded load balancer's admin
// API (mythex lb).
type EmbeddedLB struct {
	Client *lb.Client
	// HealthyThreshold is the target group's healthy threshold, for saying
	// how many passed checks a target still needs; 0 leaves it unsaid.
	HealthyThreshold int
}

var _ LB = EmbeddedLB{}

// Target reports the target; Registered false when the LB does not know it.
func (e EmbeddedLB) Target(ctx context.Context, id string) (TargetView, error) {
	t, err := e.Client.Target(ctx, id)
	if errors.Is(err, lb.ErrTargetNotFound) {
		return TargetView{}, nil
	}
	if err != nil {
		return TargetView{}, unavailable(err)
	}
	v := TargetView{
		Registered: t.State.String() != "unused",
		State:      t.State.String(),
		InRotation: t.InRotation,
		InFlight:   int(t.InFlight),
		Reason:     string(t.Reason),
	}
	if e.HealthyThreshold > 0 && (v.State == "initial" || v.State == "unhealthy") {
		passed := 0
		for _, c := range t.LastChecks { // newest first
			if !c.OK {
				break
			}
			passed++
		}
		v.Checks = fmt.Sprintf("%d/%d checks passed", min(passed, e.HealthyThreshold), e.HealthyThreshold)
	}
	return v, nil
}

// unavailable marks the admin API's 5xx answers as worth a retry.
func unavailable(err error) error {
	var ae *lb.APIError
	if errors.As(err, &ae) && ae.Status >= 500 {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// Register registers the target (state initial).
func (e EmbeddedLB) Register(ctx context.Context, id, address string) error {
	_, err := e.Client.Register(ctx, id, address)
	return unavailable(err)
}

// Deregister starts draining the target.
func (e EmbeddedLB) Deregister(ctx context.Context, id string) error {
	_, err := e.Client.Deregister(ctx, id)
	if errors.Is(err, lb.ErrTargetNotFound) {
		return nil
	}
	return unavailable(err)
}

// Package embedded is the lbport.Driver of mythex's own load balancer
// (`mythex lb`), over its admin API: the embedded LB reports its own truth
// about a target — in rotation or not, requests in flight — which a real ALB
// does not.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/lbport"
)

// Driver drives the embedded load balancer through its admin API client.
type Driver struct {
	c *lbapi.Client
	// HealthyThreshold is the target group's healthy threshold, for saying
	// in Target.Checks how many passed checks a target initial or unhealthy
	// has of those it needs; 0 leaves it unsaid.
	HealthyThreshold int
}

var _ lbport.Driver = (*Driver)(nil)

// New returns a driver over the admin API client c.
func New(c *lbapi.Client) *Driver { return &Driver{c: c} }

// Kind is "embedded".
func (d *Driver) Kind() string { return "embedded" }

// Register registers the target (state initial).
func (d *Driver) Register(ctx context.Context, t lbport.TargetRef) error {
	_, err := d.c.Register(ctx, t.ID, t.Address)
	return mapErr(err)
}

// Deregister starts draining the target; an unknown target is not an error.
func (d *Driver) Deregister(ctx context.Context, t lbport.TargetRef) error {
	_, err := d.c.Deregister(ctx, t.ID)
	if errors.Is(err, lbapi.ErrTargetNotFound) {
		return nil
	}
	return mapErr(err)
}

// Describe reports each target, in the order given; an unknown target is
// unused, Target.NotRegistered.
func (d *Driver) Describe(ctx context.Context, ts ...lbport.TargetRef) ([]lbport.Target, error) {
	out := make([]lbport.Target, 0, len(ts))
	if len(ts) == 1 {
		// One target: the single-target endpoint is cheaper than listing.
		st, err := d.c.Target(ctx, ts[0].ID)
		if errors.Is(err, lbapi.ErrTargetNotFound) {
			return append(out, notRegistered(ts[0])), nil
		}
		if err != nil {
			return nil, mapErr(err)
		}
		return append(out, d.convert(st)), nil
	}
	all, err := d.c.Targets(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	byID := make(map[string]lbapi.TargetStatus, len(all))
	for _, st := range all {
		byID[st.ID] = st
	}
	for _, t := range ts {
		st, ok := byID[t.ID]
		if !ok {
			out = append(out, notRegistered(t))
			continue
		}
		out = append(out, d.convert(st))
	}
	return out, nil
}

// Settings reads the target group's live settings (GET /v1/settings). The
// embedded LB has no slow start: SlowStart is 0.
func (d *Driver) Settings(ctx context.Context) (lbport.Settings, error) {
	w, err := d.c.Settings(ctx)
	if err != nil {
		return lbport.Settings{}, fmt.Errorf("read the embedded target group's settings: %w", mapErr(err))
	}
	return lbport.Settings{
		HealthCheck: lbport.HealthCheck{Path: w.HealthCheckPath, Interval: seconds(w.HealthCheckIntervalSeconds),
			Timeout: seconds(w.HealthCheckTimeoutSeconds), HealthyThreshold: w.HealthyThreshold, UnhealthyThreshold: w.UnhealthyThreshold},
		DeregistrationDelay: seconds(w.DeregistrationDelaySeconds),
		Algorithm:           w.Algorithm,
	}, nil
}

// Apply sets the health check, deregistration delay and algorithm while the
// LB serves (PUT /v1/settings), as ModifyTargetGroup and
// ModifyTargetGroupAttributes do an ALB's; they last until the LB restarts
// and reads its mythex.yml again. An empty Algorithm keeps the live one;
// a slow start is refused (ErrUnsupported). Settings the LB refuses match
// lbport.ErrInvalidSettings, and nothing changed.
func (d *Driver) Apply(ctx context.Context, s lbport.Settings) error {
	if s.SlowStart != 0 {
		return fmt.Errorf("apply slow start %v to the embedded load balancer: %w", s.SlowStart, lbport.ErrUnsupported)
	}
	algo := s.Algorithm
	if algo == "" {
		live, err := d.c.Settings(ctx)
		if err != nil {
			return fmt.Errorf("apply the embedded target group's settings: %w", mapErr(err))
		}
		algo = live.Algorithm
	}
	hc := s.HealthCheck
	_, err := d.c.SetSettings(ctx, lbapi.Settings{
		HealthCheckPath: hc.Path, HealthCheckIntervalSeconds: hc.Interval.Seconds(), HealthCheckTimeoutSeconds: hc.Timeout.Seconds(),
		HealthyThreshold: hc.HealthyThreshold, UnhealthyThreshold: hc.UnhealthyThreshold,
		DeregistrationDelaySeconds: s.DeregistrationDelay.Seconds(), Algorithm: algo,
	})
	if errors.Is(err, lbapi.ErrInvalidSettings) {
		return fmt.Errorf("apply the embedded target group's settings: %w: %w", lbport.ErrInvalidSettings, err)
	}
	if err != nil {
		return fmt.Errorf("apply the embedded target group's settings: %w", mapErr(err))
	}
	return nil
}

// seconds is secs as a Duration, to the nanosecond.
func seconds(secs float64) time.Duration {
	return time.Duration(math.Round(secs * float64(time.Second)))
}

func notRegistered(t lbport.TargetRef) lbport.Target {
	return lbport.Target{ID: t.ID, Address: t.Address, State: lbport.StateUnused, Reason: lbport.ReasonNotRegistered}
}

func (d *Driver) convert(st lbapi.TargetStatus) lbport.Target {
	t := lbport.Target{
		ID: st.ID, Address: st.Address, State: st.State, Reason: st.Reason,
		Description: st.Description, InRotation: st.InRotation, InFlight: int(st.InFlight),
	}
	if d.HealthyThreshold > 0 && (st.State == lbport.StateInitial || st.State == lbport.StateUnhealthy) {
		passed := 0
		for _, c := range st.LastChecks { // newest first
			if !c.OK {
				break
			}
			passed++
		}
		t.Checks = fmt.Sprintf("%d/%d checks passed", min(passed, d.HealthyThreshold), d.HealthyThreshold)
	}
	return t
}

func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lbapi.ErrUnauthorized):
		return fmt.Errorf("%w: %w", lbport.ErrUnauthorized, err)
	case errors.Is(err, lbapi.ErrInvalidTarget):
		return fmt.Errorf("%w: %w", lbport.ErrInvalidTarget, err)
	}
	return err
}

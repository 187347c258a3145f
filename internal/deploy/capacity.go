package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
)

// ErrCapacity: too few targets outside a batch were healthy and in rotation
// (deploy.min_in_service) for the deploy to drain it; the batch was not
// touched.
var ErrCapacity = errors.New("not enough capacity to drain a batch")

// targetRead is one target as the LB reported it, or why it could not.
type targetRead struct {
	Host string
	View lbport.Target
	Err  error
}

// capacityVerdict is the decision on draining a batch.
type capacityVerdict struct {
	OK        bool
	InService int
	Required  int
	// Out names each host outside the batch that does not count, with why.
	Out []string
}

func (v capacityVerdict) String() string {
	s := fmt.Sprintf("%d target(s) outside the batch healthy and in rotation, deploy.min_in_service needs %d", v.InService, v.Required)
	if len(v.Out) > 0 {
		s += "; out: " + strings.Join(v.Out, ", ")
	}
	return s
}

// decideCapacity is the live capacity rule: the targets outside batch that
// the LB reports healthy and in rotation must number at least required
// (fleet.CapacityHolds, the arithmetic `mythex check` uses too). A target
// the LB could not be asked about does not count. A batch none of whose
// targets is in service (a first rollout, hosts already out) takes nothing
// out of rotation, so it may always go.
func decideCapacity(reads []targetRead, batch []string, required int) capacityVerdict {
	v := capacityVerdict{Required: required}
	serving := false
	for _, r := range reads {
		if slices.Contains(batch, r.Host) {
			serving = serving || (r.Err != nil || lbport.InService(r.View))
			continue
		}
		switch {
		case r.Err != nil:
			v.Out = append(v.Out, fmt.Sprintf("%s (load balancer: %v)", r.Host, r.Err))
		case lbport.InService(r.View):
			v.InService++
		default:
			v.Out = append(v.Out, fmt.Sprintf("%s (%s)", r.Host, describe(r.View)))
		}
	}
	v.OK = !serving || fleet.CapacityHolds(v.InService, required)
	return v
}

// readTargets asks the LB about every host, in the deploy's next poll.
func (d *Deployer) readTargets(ctx context.Context) []targetRead {
	reads := make([]targetRead, 0, len(d.o.Hosts))
	refs := make([]lbport.TargetRef, 0, len(d.o.Hosts))
	for _, h := range d.o.Hosts {
		refs = append(refs, ref(h))
	}
	ts, err := d.poller.Read(ctx, refs...)
	for i, h := range d.o.Hosts {
		r := targetRead{Host: h.Name, Err: err}
		if err == nil {
			r.View = ts[i]
			d.sawTarget(h.Name, PhaseCapacity, r.View)
		}
		reads = append(reads, r)
	}
	return reads
}

// waitCapacity waits, bounded by capacityWait, until the LB reports enough
// targets outside batch healthy and in rotation, printing progress that
// names the hosts that are out. host and p label the progress.
func (d *Deployer) waitCapacity(ctx context.Context, host string, p Phase, batch []string) (capacityVerdict, error) {
	begin := d.clock.Now()
	limit := capacityWait(d.o.Config)
	pr := d.progress(host, p)
	pr.last = -progressEvery // the first shortfall is said at once
	for {
		v := decideCapacity(d.readTargets(ctx), batch, d.required)
		if v.OK {
			return v, nil
		}
		el := d.clock.Since(begin)
		if el >= limit {
			return v, fmt.Errorf("%w: %s (waited %v)", ErrCapacity, v, limit.Round(time.Millisecond))
		}
		pr.maybe(el, func() string {
			return "waiting for capacity before draining " + strings.Join(batch, ", ") + ": " + v.String()
		})
		select {
		case <-ctx.Done():
			return v, context.Cause(ctx)
		case <-d.clock.After(d.o.Poll):
		}
	}
}

// capacityWait bounds the wait for capacity: long enough for a target that
// just came back to pass its healthy threshold.
func capacityWait(cfg *fleet.Config) time.Duration { return healthyTimeout(cfg) }

package deployrec

import (
	"context"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/probe"
)

// Load is the prober running through a deploy (`mythex deploy --measure`);
// a nil *Load measures nothing.
type Load struct {
	p    *probe.Prober
	rec  *Recorder
	tail time.Duration
}

// leadMin is the least time the prober runs before the deploy begins.
const leadMin = 500 * time.Millisecond

// StartLoad starts p a moment (one health check interval of hc, at least
// leadMin) before the deploy begins, so the report shows the fleet serving
// before anything changed; rec (nil: nothing) records the run at rate.
// Errors are the prober's start errors.
func StartLoad(ctx context.Context, p *probe.Prober, rec *Recorder, rate float64, hc fleet.HealthCheck) (*Load, error) {
	rec.ProbeStarted(p.Config().URL, rate)
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	sleepCtx(ctx, max(hc.Interval, leadMin))
	// The tail is as long as the LB needs to notice anything the deploy left
	// behind (U failed checks, each up to the timeout).
	return &Load{p: p, rec: rec, tail: hc.Interval*time.Duration(hc.UnhealthyThreshold) + hc.Timeout}, nil
}

// Stop waits out the tail, stops the prober and returns its report; nil on a
// nil *Load.
func (l *Load) Stop(ctx context.Context) *probe.Report {
	if l == nil {
		return nil
	}
	sleepCtx(ctx, l.tail)
	rep := l.p.Stop()
	l.rec.ProbeStopped(rep)
	return &rep
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

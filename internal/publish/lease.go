package publish

import (
	"context"
	"errors"
	"time"

	"github.com/mythex/mythex/internal/platform"
)

// leaseAttempts bounds the tries to take a lease someone else holds.
const leaseAttempts = 3

// hold takes machine id's lease when the platform fences writes with leases
// (Fly), for as long as a publish and its rollback can take, and remembers
// it for releaseLeases. A lease held by someone else (flyctl, Fly itself) is
// waited for a few polls, then returned as an error matching
// platform.ErrLeaseHeld: the caller treats the machine as not updated —
// "not yet", never failed.
func (g *Gate) hold(ctx context.Context, app, id string) error {
	l, ok := g.p.(platform.Leaser)
	if !ok {
		return nil
	}
	ttl := g.opts.Window + g.opts.RestoreTimeout + g.opts.SwitchTimeout
	wait := g.opts.PollInterval
	for attempt := 1; ; attempt++ {
		cctx, cancel := g.callCtx(ctx)
		err := l.AcquireLease(cctx, app, id, ttl)
		cancel()
		if err == nil {
			g.leaseMu.Lock()
			if g.leased[app] == nil {
				g.leased[app] = map[string]bool{}
			}
			g.leased[app][id] = true
			g.leaseMu.Unlock()
			return nil
		}
		if !errors.Is(err, platform.ErrLeaseHeld) || attempt >= leaseAttempts {
			return err
		}
		if err := g.sleep(ctx, wait); err != nil {
			return err
		}
		wait *= 2
	}
}

// releaseLeases gives back every lease taken for app; failures are logged
// (a lease expires at its TTL anyway).
func (g *Gate) releaseLeases(ctx context.Context, app string) {
	l, ok := g.p.(platform.Leaser)
	if !ok {
		return
	}
	g.leaseMu.Lock()
	ids := g.leased[app]
	delete(g.leased, app)
	g.leaseMu.Unlock()
	ctx = context.WithoutCancel(ctx)
	for id := range ids {
		cctx, cancel := context.WithTimeout(ctx, min(g.opts.CallTimeout, 10*time.Second))
		if err := l.ReleaseLease(cctx, app, id); err != nil {
			g.log.Warn("release lease", "app", app, "machine", id, "err", err)
		}
		cancel()
	}
}

package publish

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/platform"
)

// ensureServing makes the serving machines serve before anything else moves:
// a sleeping (stopped or suspended) machine is started, and every one is
// registered with the router and in rotation.
func (g *Gate) ensureServing(ctx context.Context, app, rel string, t0 time.Time, old []platform.Machine, h Health) error {
	var woke []string
	var ready []platform.Machine
	for _, m := range old {
		if m.State == platform.StateStarted {
			ready = append(ready, m)
			continue
		}
		cctx, cancel := g.callCtx(ctx)
		err := g.p.Start(cctx, app, m.ID)
		cancel()
		if err != nil {
			return fmt.Errorf("wake machine %s: %w", m.ID, err)
		}
		woke = append(woke, m.ID)
	}
	if len(woke) > 0 {
		g.step(app, rel, t0, "woke %d sleeping machine(s) of the serving release: %v", len(woke), woke)
		w, err := g.waitReady(ctx, app, woke, h, g.opts.RestoreTimeout)
		if err != nil {
			return err
		}
		ready = append(ready, w...)
	}
	return g.register(ctx, ready)
}

// register adds machines to the router (those not registered yet) and waits
// until every one is in rotation.
func (g *Gate) register(ctx context.Context, ms []platform.Machine) error {
	if g.router == nil || len(ms) == 0 {
		return nil
	}
	for _, m := range ms {
		st, err := lbport.Describe1(ctx, g.router, targetOf(m))
		if err != nil {
			return fmt.Errorf("%w: target %s: %v", ErrRouter, m.ID, err)
		}
		if st.Registered() && st.State != lbport.StateDraining {
			continue
		}
		if err := g.router.Register(ctx, targetOf(m)); err != nil {
			return fmt.Errorf("%w: register %s: %v", ErrRouter, m.ID, err)
		}
	}
	return g.waitRouter(ctx, ms, func(st lbport.Target) bool { return st.InRotation }, "in rotation")
}

// targetOf is machine m's target in the load balancer.
func targetOf(m platform.Machine) lbport.TargetRef {
	return lbport.TargetRef{ID: m.ID, Address: m.Address}
}

// waitRouter polls the router until cond holds for every machine, for at
// most the switch timeout.
func (g *Gate) waitRouter(ctx context.Context, ms []platform.Machine, cond func(lbport.Target) bool, what string) error {
	deadline := g.clock.Now().Add(g.opts.SwitchTimeout)
	for {
		var waiting []string
		for _, m := range ms {
			st, err := lbport.Describe1(ctx, g.router, targetOf(m))
			if err != nil || !cond(st) {
				waiting = append(waiting, m.ID)
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		if !g.clock.Now().Before(deadline) {
			return fmt.Errorf("%w: targets %v not %s after %s", ErrRouter, waiting, what, g.opts.SwitchTimeout)
		}
		if err := g.sleep(ctx, g.opts.PollInterval); err != nil {
			return err
		}
	}
}

// switchTo moves traffic from old to news: register the new machines and wait
// until the router routes to them, deregister the old ones and wait until
// they are out of rotation with nothing in flight, then stop them. Stopped
// machines are kept: they are the fastest restore.
func (g *Gate) switchTo(ctx context.Context, app, rel string, t0 time.Time, news, old []platform.Machine) error {
	if err := g.register(ctx, news); err != nil {
		return err
	}
	g.step(app, rel, t0, "router: %d new machine(s) in rotation", len(news))
	for _, m := range old {
		if err := g.router.Deregister(ctx, targetOf(m)); err != nil {
			return fmt.Errorf("%w: deregister %s: %v", ErrRouter, m.ID, err)
		}
	}
	if err := g.waitRouter(ctx, old, lbport.OutOfRotation, "drained"); err != nil {
		// They no longer receive new requests; stopping now may cut what is
		// still in flight, so keep them running and say so.
		g.log.Warn("old machines not drained in time; left running", "app", app, "err", err)
		return nil
	}
	for _, m := range old {
		cctx, cancel := g.callCtx(ctx)
		err := g.p.Stop(cctx, app, m.ID)
		cancel()
		if err != nil && !errors.Is(err, platform.ErrNotFound) {
			g.log.Warn("stop old machine", "app", app, "machine", m.ID, "err", err)
		}
	}
	if len(old) > 0 {
		g.step(app, rel, t0, "router: %d old machine(s) drained and stopped (kept for a fast restore)", len(old))
	}
	return nil
}

// waitReady waits until every machine reads started and answers its health
// check at its own address (when it has one), for at most timeout. It
// returns the machines as last seen.
func (g *Gate) waitReady(ctx context.Context, app string, ids []string, h Health, timeout time.Duration) ([]platform.Machine, error) {
	return g.waitOn(ctx, app, ids, h, timeout, nil)
}

// waitOn is waitReady with an optional want: the config each machine must
// run (its release id), updated again when a machine has settled on another
// one — an update whose answer was lost (a call timeout, a 429) may not
// have happened.
func (g *Gate) waitOn(ctx context.Context, app string, ids []string, h Health, timeout time.Duration, want *platform.Config) ([]platform.Machine, error) {
	deadline := g.clock.Now().Add(timeout)
	issued := map[string]time.Time{}
	for _, id := range ids {
		issued[id] = g.clock.Now()
	}
	resend := g.opts.CallTimeout + 3*g.opts.PollInterval
	for {
		var ready []platform.Machine
		var last error
		for _, id := range ids {
			cctx, cancel := g.callCtx(ctx)
			m, err := g.p.Get(cctx, app, id)
			cancel()
			switch {
			case err != nil:
				last = fmt.Errorf("machine %s: %w", id, err)
			case want != nil && m.Release() != want.Metadata[platform.MetadataRelease]:
				last = fmt.Errorf("machine %s still runs %s (%s)", id, orNone(m.Release()), m.State)
				settled := !m.State.Transient() && m.State != platform.StateCreated
				if settled && g.clock.Since(issued[id]) >= resend {
					issued[id] = g.clock.Now()
					if _, err := g.update(ctx, app, id, *want); err != nil {
						last = fmt.Errorf("machine %s: update again: %w", id, err)
					}
				}
			case m.State != platform.StateStarted:
				last = fmt.Errorf("machine %s is %s", id, m.State)
			case m.Address != "" && h.Path != "":
				if p := g.checker.Check(ctx, "http://"+m.Address+h.Path); !p.OK {
					last = fmt.Errorf("machine %s health check: %s", id, p)
				} else {
					ready = append(ready, m)
				}
			default:
				ready = append(ready, m)
			}
		}
		if len(ready) == len(ids) {
			return ready, nil
		}
		if !g.clock.Now().Before(deadline) {
			return nil, fmt.Errorf("not ready after %s: %w", timeout, last)
		}
		if err := g.sleep(ctx, g.opts.PollInterval); err != nil {
			return nil, err
		}
	}
}

func orNone(rel string) string {
	if rel == "" {
		return "no release of mythex"
	}
	return "release " + rel
}

// restore makes target serve app again in place of failed: blue-green
// starts target's kept machines (or creates new ones from its config), waits
// until they are healthy and in rotation, then drains and removes failed's
// machines; in place updates failed's machines back to target's config. It
// never deletes anything of target.
//
// ctx should outlive an interruption (the caller strips the operator's
// first signal and keeps only the abort). Control-plane errors on an update
// do not end it: the machines are watched until they run target, updated
// again if they settle on something else, for at most RestoreTimeout.
func (g *Gate) restore(ctx context.Context, failed, target Release, t0 time.Time) *Rollback {
	app := failed.App
	start := g.clock.Now()
	rb := &Rollback{From: failed.ID, To: target.ID}
	cfg := target.Config.WithMetadata(platform.MetadataRelease, target.ID)
	g.step(app, failed.ID, t0, "rolling back %s to the last good release %s (image %s)", failed.ID, target.ID, cfg.Image)
	finish := func(err error) *Rollback {
		rb.Took = g.clock.Since(start)
		if err != nil {
			rb.Error = err.Error()
			g.step(app, failed.ID, t0, "rollback to %s did not complete: %v", target.ID, err)
		} else {
			g.step(app, failed.ID, t0, "rolled back to %s in %s", target.ID, rb.Took.Round(time.Millisecond))
		}
		return rb
	}
	if failed.Strategy == StrategyBlueGreen && g.router != nil {
		cctx, cancel := g.callCtx(ctx)
		all, err := g.p.List(cctx, app)
		cancel()
		if err != nil {
			return finish(fmt.Errorf("list machines: %w", err))
		}
		var ids []string
		for _, m := range all {
			if m.Release() == target.ID {
				ids = append(ids, m.ID)
				if m.State != platform.StateStarted {
					cctx, cancel := g.callCtx(ctx)
					err := g.p.Start(cctx, app, m.ID)
					cancel()
					if err != nil {
						return finish(fmt.Errorf("start machine %s of %s: %w", m.ID, target.ID, err))
					}
				}
			}
		}
		if len(ids) == 0 {
			n := max(len(failed.Machines), 1)
			for i := 0; i < n; i++ {
				cctx, cancel := g.callCtx(ctx)
				m, err := g.p.Create(cctx, app, cfg)
				cancel()
				if err != nil {
					return finish(fmt.Errorf("recreate a machine of %s: %w", target.ID, err))
				}
				ids = append(ids, m.ID)
			}
		}
		ready, err := g.waitReady(ctx, app, ids, target.Health, g.opts.RestoreTimeout)
		if err != nil {
			return finish(err)
		}
		olds, _ := g.getAll(ctx, app, failed.Machines)
		if err := g.switchTo(ctx, app, failed.ID, t0, ready, olds); err != nil {
			return finish(err)
		}
		g.discard(ctx, app, failed.Machines)
		rb.Machines = ids
		return finish(nil)
	}
	for _, id := range failed.Machines {
		_, err := g.update(ctx, app, id, cfg)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return finish(fmt.Errorf("update machine %s back to %s: %w", id, target.ID, err))
		case platform.IsControlPlane(err) || errors.Is(err, platform.ErrConflict):
			// May have happened or not: watched below, sent again if not.
			g.step(app, failed.ID, t0, "machine %s: the platform did not answer the update back to %s (%v); watching what it runs", id, target.ID, err)
		default:
			return finish(fmt.Errorf("update machine %s back to %s: %w", id, target.ID, err))
		}
	}
	// Machines that were asleep stay asleep on the restored config: wait
	// only for the ones that served.
	if _, err := g.waitOn(ctx, app, failed.Judged(), target.Health, g.opts.RestoreTimeout, &cfg); err != nil {
		return finish(err)
	}
	rb.Machines = append([]string(nil), failed.Judged()...)
	return finish(nil)
}

// prune destroys stopped machines of releases older than the one just
// replaced: the release that served before keeps its (stopped) machines for
// a fast restore; releases are never deleted from the store and images are
// never removed, so any release can still be restored from its config.
func (g *Gate) prune(ctx context.Context, app, live string, old []platform.Machine) {
	keep := map[string]bool{live: true}
	for _, m := range old {
		keep[m.Release()] = true
	}
	cctx, cancel := g.callCtx(ctx)
	all, err := g.p.List(cctx, app)
	cancel()
	if err != nil {
		return
	}
	for _, m := range all {
		rel := m.Release()
		if rel == "" || keep[rel] || m.State == platform.StateStarted {
			continue
		}
		cctx, cancel := g.callCtx(ctx)
		if err := g.p.Destroy(cctx, app, m.ID); err != nil {
			g.log.Warn("prune machine", "app", app, "machine", m.ID, "err", err)
		}
		cancel()
	}
}

package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/runtime"
)

// recoveryTimeout bounds one recovery (stop, start, health, LB).
const recoveryTimeout = 10 * time.Minute

// registerRetry bounds how long a recovery keeps trying to put the target
// back into the load balancer, and how long it waits between tries at most.
const (
	registerFor      = 2 * time.Minute
	registerMaxDelay = 10 * time.Second
)

// restoreAction is what a recovery does to the definition store.
type restoreAction string

const (
	// restoreStartCurrent: the definition to restore is already current;
	// make it run (replacing whatever a half-finished deploy left).
	restoreStartCurrent restoreAction = "start-current"
	// restoreRollback: it is the previous one; swap it back (nothing lost).
	restoreRollback restoreAction = "rollback"
	// restorePublishLastGood: it is the last known good, neither current nor
	// previous; publish it again.
	restorePublishLastGood restoreAction = "publish-last-good"
	// restoreStopAll: the host ran nothing before the deploy (no last good,
	// nothing current when the lease was taken): stop what the deploy
	// started and leave the host out of the load balancer.
	restoreStopAll restoreAction = "stop-all"
)

// planRestore decides how to return the host to a verified definition after
// a deploy's lease ended without release. The target is the last known good
// now (a definition marked good during the dead deploy is verified too);
// without one, what was current when the lease was taken (restore, from the
// lease). It is pure; errors: the definition to return to is no longer kept.
func planRestore(refs definition.Refs, restore *restoreTarget) (restoreAction, string, error) {
	want := refs.LastGood
	if want == "" && restore != nil {
		want = restore.Hash
	}
	switch want {
	case "":
		return restoreStopAll, "", nil
	case refs.Current:
		return restoreStartCurrent, want, nil
	case refs.Previous:
		return restoreRollback, want, nil
	case refs.LastGood:
		return restorePublishLastGood, want, nil
	}
	return "", want, fmt.Errorf("the definition to return to (%.12s, version %s) is no longer kept on this host", want, restore.Version)
}

// restoreTargetNow is what the host lease records at acquire: the last known
// good, else the current definition, else nothing.
func (a *Agent) restoreTargetNow() *restoreTarget {
	for _, ref := range []definition.Ref{definition.RefLastGood, definition.RefCurrent} {
		if d, err := a.store.Get(ref); err == nil {
			return &restoreTarget{Version: d.Version, Hash: d.Hash}
		}
	}
	return nil
}

// recover runs when a deploy's host lease ends without release (expired,
// ran out while the agent was down, broken), with the host lock held: it
// returns the host to a verified definition (planRestore), running and
// healthy, and puts it back into the load balancer. It records its progress
// for status and returns its error.
func (a *Agent) recover(l Lease, restore *restoreTarget, reason string, step string) error {
	a.metrics.recoveries.Inc()
	rec := &agentapi.Recovery{State: agentapi.RecoveryRunning, Holder: l.Holder, Reason: reason, Step: step, Started: a.clock.Now()}
	a.setRecovery(rec)
	// A step of the dead deploy may still be running (its lease ended
	// under it): the recovery acts only after it, on what it left.
	defer a.ownHostForRecovery(step)()
	ctx, cancel := context.WithTimeout(a.ctx, recoveryTimeout)
	defer cancel()
	var (
		version      string
		registerable bool
		out          bool
		err          error
	)
	if signalledSteps[step] {
		// The restore stops what runs: a host that serves leaves rotation
		// first, and only with enough of the fleet in service.
		out, err = a.leaveRotation(ctx)
	}
	if err == nil {
		a.opMu.Lock()
		version, registerable, err = a.restore(ctx, restore, step)
		a.opMu.Unlock()
	}
	rec.Version = version
	if (err == nil && registerable) || out {
		// A host this recovery took out goes back in whatever happened:
		// the load balancer's health check decides whether it serves.
		rerr := a.registerAgain(ctx)
		rec.Registered = rerr == nil
		if err == nil && rerr == nil {
			rerr = a.waitInService(ctx)
		}
		err = errors.Join(err, rerr)
	}
	done := a.clock.Now()
	rec.Finished = &done
	rec.State = agentapi.RecoveryRestored
	if err != nil {
		rec.State, rec.Error = agentapi.RecoveryFailed, err.Error()
		a.log.Error("recovery after a lease ended failed; the host needs attention", "holder", l.Holder, "reason", reason, "err", err)
	} else {
		a.log.Warn("recovery done: the host runs a verified definition again", "holder", l.Holder, "reason", reason, "version", version, "registered", rec.Registered)
	}
	a.setRecovery(rec)
	return err
}

// signalledSteps are the deploy steps after which the host's services may
// have been signalled (drained, stopped, replaced): a recovery after one of
// them restarts every service, as they may be on their way out.
var signalledSteps = map[string]bool{"drain": true, "stop": true, "start": true, "rollback": true}

// restore carries out planRestore. It returns the version now running and
// whether the host belongs in the load balancer. When the deploy never got
// past publish (step), the services still run and serve — possibly in
// rotation — and those already running the definition to return to are left
// alone: restoring then drops nothing. After a drain or later every service
// is stopped and started again.
func (a *Agent) restore(ctx context.Context, target *restoreTarget, step string) (string, bool, error) {
	refs, err := a.store.Refs()
	if err != nil {
		return "", false, err
	}
	action, hash, err := planRestore(refs, target)
	if err != nil {
		return "", false, err
	}
	a.log.Warn("recovery: returning the host to a verified definition", "action", action, "hash", short(hash), "step", step)
	// Decide first, then act: the store names the definition to return to
	// before anything is stopped, so that a recovery that fails halfway
	// leaves a verified current definition — which the watchdog heals and a
	// retry starts — never the half-deployed one.
	switch action {
	case restoreRollback:
		if _, err := a.store.Rollback(); err != nil {
			return "", false, err
		}
	case restorePublishLastGood:
		lg, err := a.store.LastGood()
		if err != nil {
			return "", false, err
		}
		if _, err := a.store.Publish(lg); err != nil {
			return "", false, err
		}
	}
	if action == restoreStopAll || signalledSteps[step] {
		if _, err := a.stopAll(ctx); err != nil {
			return "", false, fmt.Errorf("stop what the deploy left: %w", err)
		}
	}
	if action == restoreStopAll {
		return "", false, nil
	}
	if err := a.finishDrains(ctx); err != nil {
		return "", false, err
	}
	d, err := a.store.Current()
	if err != nil {
		return "", false, err
	}
	// Whatever a half-finished deploy left running (drained, stopped, a new
	// version) is replaced by the verified spec.
	if err := a.replaceOthers(ctx, d); err != nil {
		return d.Version, false, err
	}
	if _, err := a.startDef(ctx, d); err != nil {
		return d.Version, false, err
	}
	return d.Version, true, nil
}

// replaceOthers stops the running instances that do not run d's spec, so
// that d starts on a clean host.
func (a *Agent) replaceOthers(ctx context.Context, d *definition.Definition) error {
	sts, err := a.rt.Status(ctx)
	if err != nil {
		return err
	}
	for _, s := range sts {
		if !active(s) {
			continue
		}
		if svc, ok := d.Service(s.Name); ok && svc.SpecHash() == s.SpecHash {
			continue
		}
		if _, err := a.rt.Stop(ctx, s.Name, runtime.UseSpecGrace); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			return fmt.Errorf("stop %s (version %s): %w", s.Name, s.Version, err)
		}
	}
	return nil
}

// registerAgain puts the target back into the load balancer, retrying with
// backoff (1s, doubling, at most registerMaxDelay) for up to registerFor: one
// refused connection must not leave the host out of rotation.
func (a *Agent) registerAgain(ctx context.Context) error {
	rc := a.cfg.Recovery
	if rc.LB == nil {
		return nil
	}
	deadline := a.clock.Now().Add(registerFor)
	delay := time.Second
	for attempt := 1; ; attempt++ {
		err := rc.LB.Register(ctx, lbport.TargetRef{ID: rc.TargetID, Address: rc.TargetAddress})
		if err == nil {
			a.log.Info("recovery: target registered with the load balancer again", "target", rc.TargetID, "attempts", attempt)
			return nil
		}
		if !a.clock.Now().Add(delay).Before(deadline) {
			return fmt.Errorf("register %s with the load balancer (%d attempts over %v): %w", rc.TargetID, attempt, registerFor, err)
		}
		a.log.Warn("recovery: load balancer refused the registration; retrying", "target", rc.TargetID, "attempt", attempt, "in", delay, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("register %s with the load balancer: %w (last error: %v)", rc.TargetID, ctx.Err(), err)
		case <-a.clock.After(delay):
		}
		delay = min(2*delay, registerMaxDelay)
	}
}

func (a *Agent) setRecovery(r *agentapi.Recovery) {
	c := *r
	a.recMu.Lock()
	a.lastRecovery = &c
	a.recMu.Unlock()
}

func (a *Agent) recovery() *agentapi.Recovery {
	a.recMu.Lock()
	defer a.recMu.Unlock()
	if a.lastRecovery == nil {
		return nil
	}
	c := *a.lastRecovery
	return &c
}

// restoreStatus answers "is this host whole?" (agentapi.RestoreStatus).
func (a *Agent) restoreStatus(ctx context.Context) agentapi.RestoreStatus {
	if r := a.recovery(); r != nil {
		switch r.State {
		case agentapi.RecoveryRunning:
			return agentapi.RestoreStatus{Reason: fmt.Sprintf("the agent is returning the host to a verified definition (lease of %q %s)", r.Holder, r.Reason)}
		case agentapi.RecoveryFailed:
			if _, live := a.hostLease.current(); !live {
				return agentapi.RestoreStatus{Reason: "the last recovery failed: " + r.Error}
			}
		}
	}
	refs, err := a.store.Refs()
	if err != nil {
		return agentapi.RestoreStatus{Reason: err.Error()}
	}
	d, err := a.store.Current()
	if errors.Is(err, definition.ErrNotFound) {
		return agentapi.RestoreStatus{Reason: "nothing published to this host"}
	}
	if err != nil {
		return agentapi.RestoreStatus{Reason: err.Error()}
	}
	rs := agentapi.RestoreStatus{Version: d.Version}
	if refs.HalfDeployed() {
		rs.Reason = fmt.Sprintf("the current definition %s never ran whole on this host (a deploy left it half done)", d.Version)
		return rs
	}
	sts, err := a.rt.Status(ctx)
	if err != nil {
		rs.Reason = "runtime status: " + err.Error()
		return rs
	}
	checks, ok := runtime.Verify(d, sts)
	if !ok {
		for _, c := range checks {
			if !c.OK {
				rs.Reason = fmt.Sprintf("%s: %s", c.Name, c.Reason)
				return rs
			}
		}
	}
	rs.Restored = true
	return rs
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

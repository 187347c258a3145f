package deploy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
)

// hostRun is one host's deploy in progress.
type hostRun struct {
	d     *Deployer
	h     Host
	res   *HostResult
	lease string
	// deregistered is true while the target is out of the LB by our hand.
	deregistered bool
	// published is true once the new definition is current on the host.
	published bool
}

// host deploys to one host; on failure after the host was changed it rolls the
// host back. prevVersion is what the host ran before.
func (d *Deployer) host(ctx context.Context, h Host, prevVersion string) (res HostResult, err error) {
	res = HostResult{Host: h.Name, PreviousVersion: prevVersion}
	if prevVersion != "" {
		// The bound is for replacing a running version; a first rollout
		// drains nothing and has none.
		res.BoundSeconds = d.bound.Total().Seconds()
	}
	begin := d.clock.Now()
	defer func() { res.Seconds = d.clock.Since(begin).Seconds() }()
	r := &hostRun{d: d, h: h, res: &res}

	// Lease: refused means nothing was touched on this host.
	if err := r.phase(ctx, PhaseLease, func(ctx context.Context) (string, error) {
		// The watchdog or the bootstrap may hold the host lock for a moment;
		// wait for it up to one lease TTL, then give up.
		deadline := d.clock.Now().Add(d.o.Config.Deploy.LeaseTTL)
		for {
			l, err := h.Agent.AcquireLease(ctx, false, d.o.Holder, d.o.Config.Deploy.LeaseTTL)
			if err == nil {
				r.lease = l.ID
				return "", nil
			}
			if !errors.Is(err, agentapi.ErrLeaseHeld) || !d.clock.Now().Before(deadline) {
				return "", err
			}
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-d.clock.After(10 * d.o.Poll):
			}
		}
	}); err != nil {
		return res, r.fail(PhaseLease, err, false)
	}
	hostCtx, cancel := context.WithCancelCause(ctx)
	stopRenew := r.renew(hostCtx, cancel)
	defer func() {
		stopRenew()
		cancel(nil)
	}()

	phases := []struct {
		p  Phase
		fn func(context.Context) (string, error)
	}{
		{PhasePublish, r.publish},
		{PhaseDrain, r.drain},
		{PhaseStop, r.stop},
		{PhaseStart, r.start},
		{PhaseHealthy, r.healthy},
		{PhaseVerify, r.verify},
	}
	for _, ph := range phases {
		if err := r.phase(hostCtx, ph.p, ph.fn); err != nil {
			if cause := context.Cause(hostCtx); cause != nil && !errors.Is(cause, context.Canceled) {
				err = fmt.Errorf("%w (%v)", err, cause)
			}
			stopRenew()
			return res, r.fail(ph.p, err, r.published || r.deregistered)
		}
	}
	stopRenew()
	if err := r.phase(ctx, PhaseRelease, func(ctx context.Context) (string, error) {
		if err := h.Agent.MarkGood(ctx, r.lease); err != nil {
			return "", fmt.Errorf("mark good: %w", err)
		}
		return "", h.Agent.ReleaseLease(ctx, false, r.lease)
	}); err != nil {
		// The host is deployed and verified; only the bookkeeping failed.
		return res, r.fail(PhaseRelease, err, false)
	}
	res.OK = true
	return res, nil
}

// phase runs fn as phase p, timing it and emitting begin/end/fail.
func (r *hostRun) phase(ctx context.Context, p Phase, fn func(context.Context) (string, error)) error {
	d := r.d
	begin := d.clock.Now()
	d.emit(r.h.Name, p, EventBegin, 0, "")
	detail, err := fn(ctx)
	el := d.clock.Since(begin)
	if err != nil && errors.Is(context.Cause(ctx), context.Canceled) {
		// Ctrl-C: say so rather than "context canceled" from deep inside.
		err = fmt.Errorf("interrupted: %w", context.Canceled)
	}
	r.res.Phases = append(r.res.Phases, PhaseTime{Phase: p, Seconds: el.Seconds()})
	if err != nil {
		d.emit(r.h.Name, p, EventFail, el, err.Error())
		return err
	}
	d.emit(r.h.Name, p, EventEnd, el, detail)
	return nil
}

// renew keeps the host lease alive until the returned function is called; if
// the agent says the lease is gone, the host's context is cancelled.
func (r *hostRun) renew(ctx context.Context, cancel context.CancelCauseFunc) func() {
	ttl := r.d.o.Config.Deploy.LeaseTTL
	stop := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	wg.Go(func() {
		t := r.d.clock.NewTicker(max(ttl/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.Chan():
				if _, err := r.h.Agent.RenewLease(ctx, false, r.lease, ttl); errors.Is(err, agentapi.ErrNoLease) {
					cancel(fmt.Errorf("lost the host lease: %w", err))
					return
				}
			}
		}
	})
	return func() {
		once.Do(func() { close(stop) })
		wg.Wait()
	}
}

func (r *hostRun) publish(ctx context.Context) (string, error) {
	rep, err := r.h.Agent.Publish(ctx, r.lease, r.h.Definition)
	if err != nil {
		return "", err
	}
	r.published = true
	return fmt.Sprintf("definition %s (%s)", short(rep.Current.Hash), rep.Current.Version), nil
}

// drain takes the target out of rotation and waits until the LB reports it
// out and idle: provably stopped, bounded by drain.max.
func (r *hostRun) drain(ctx context.Context) (string, error) {
	cfg := r.d.o.Config
	mode := cfg.Deploy.DrainMode
	if st, err := r.h.Agent.Status(ctx); err == nil && !anyRunning(st) {
		// A first rollout: nothing serves here, so nothing can be dropped;
		// fail-open may still list the empty target in rotation.
		return "nothing running on the host: nothing to drain", nil
	}
	if mode == fleet.DrainModeDeregister || mode == fleet.DrainModeBoth {
		if err := r.d.lb.Deregister(ctx, ref(r.h)); err != nil {
			return "", fmt.Errorf("deregister from load balancer: %w", err)
		}
		r.deregistered = true
	}
	if mode == fleet.DrainModeHealth || mode == fleet.DrainModeBoth {
		if err := r.h.Agent.Drain(ctx, r.lease, r.d.o.TargetServices); err != nil {
			return "", fmt.Errorf("flip health of %v: %w", r.d.o.TargetServices, err)
		}
	}
	t, err := r.waitDrained(ctx)
	if err != nil {
		return "", fmt.Errorf("load balancer did not take %s out of rotation: %w", r.h.Name, err)
	}
	return fmt.Sprintf("out of rotation (%s)", describe(t)), nil
}

func (r *hostRun) stop(ctx context.Context) (string, error) {
	rep, err := r.h.Agent.Stop(ctx, r.lease)
	if err != nil {
		return "", err
	}
	for _, s := range rep.Services {
		if s.Killed {
			r.res.Killed = append(r.res.Killed, s.Name)
			r.d.emit(r.h.Name, PhaseStop, EventNote, 0,
				fmt.Sprintf("%s ignored SIGTERM and was killed at its stop grace period (%.1fs)", s.Name, s.Seconds))
		}
	}
	return fmt.Sprintf("%d services stopped", len(rep.Services)), nil
}

func (r *hostRun) start(ctx context.Context) (string, error) {
	rep, err := r.h.Agent.Start(ctx, r.lease)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d services running", len(rep.Services)), nil
}

// healthy puts the target back and waits until the LB reports it healthy.
func (r *hostRun) healthy(ctx context.Context) (string, error) {
	t, err := r.d.lb.Target(ctx, r.h)
	if err != nil {
		return "", err
	}
	if r.deregistered || !t.Registered() || t.State == lbport.StateDraining {
		if err := r.d.lb.Register(ctx, ref(r.h)); err != nil {
			return "", fmt.Errorf("register with load balancer: %w", err)
		}
		r.deregistered = false
	}
	t, err = r.waitTarget(ctx, healthyTimeout(r.d.o.Config), lbport.InService)
	if err != nil {
		return "", fmt.Errorf("load balancer did not report %s healthy: %w", r.h.Name, err)
	}
	return describe(t), nil
}

func (r *hostRun) verify(ctx context.Context) (string, error) {
	if err := r.d.verifyAgent(ctx, r.h, r.d.o.Version); err != nil {
		return "", err
	}
	if err := r.d.seeThroughLB(ctx, map[string]bool{r.h.Name: true}, r.d.o.Version); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s verified via agent and load balancer", r.d.o.Version), nil
}

// healthyTimeout bounds the wait for the LB to call a returned target
// healthy: twice the healthy threshold's checks, each up to the timeout, plus
// one interval of phase.
func healthyTimeout(cfg *fleet.Config) time.Duration {
	hc := cfg.LoadBalancer.HealthCheck
	return 2*time.Duration(hc.HealthyThreshold)*(hc.Interval+hc.Timeout) + hc.Interval
}

// waitTarget waits until cond holds for the host's target or limit passes
// (the error then says what the LB last reported, or its last error). The
// deploy's Poller asks for every host being waited on in one call per poll;
// throttling and network errors are retried at the next poll.
func (r *hostRun) waitTarget(ctx context.Context, limit time.Duration, cond func(lbport.Target) bool) (lbport.Target, error) {
	return r.d.poller.Wait(ctx, ref(r.h), limit, cond)
}

// fail records the failure of phase p and, when the host was changed, rolls it
// back: the previous definition restored and running, the target back in the
// LB and healthy, the previous version verified.
func (r *hostRun) fail(p Phase, err error, changed bool) error {
	r.res.Failed, r.res.Error = p, err.Error()
	se := &StepError{Host: r.h.Name, Phase: p, Err: err}
	if changed {
		if rbErr := r.rollback(); rbErr != nil {
			se.RollbackErr = rbErr
		} else {
			se.RolledBack = true
			r.res.RolledBack = true
		}
	}
	if r.lease != "" {
		_ = r.h.Agent.ReleaseLease(context.Background(), false, r.lease)
	}
	return se
}

func (r *hostRun) rollback() error {
	d := r.d
	// A cancelled deploy (Ctrl-C) still rolls the host back, bounded in time.
	ctx, cancel := context.WithTimeout(context.Background(), d.o.Config.Drain.Max+healthyTimeout(d.o.Config)+d.o.Config.Backend.StopGracePeriod)
	defer cancel()
	return r.phase(ctx, PhaseRollback, func(ctx context.Context) (string, error) {
		if r.published && r.res.PreviousVersion == "" {
			// A first rollout: the host ran nothing before, so nothing is
			// restored; the new version's services are stopped.
			if _, err := r.h.Agent.Stop(ctx, r.lease); err != nil {
				return "", fmt.Errorf("stop the new services: %w", err)
			}
			return "the host ran nothing before this deploy: its new services were stopped", nil
		}
		if r.published {
			if _, err := r.h.Agent.Rollback(ctx, r.lease); err != nil {
				return "", fmt.Errorf("restore previous definition: %w", err)
			}
		}
		if _, err := r.healthy(ctx); err != nil {
			return "", err
		}
		if r.res.PreviousVersion != "" {
			if err := d.verifyAgent(ctx, r.h, r.res.PreviousVersion); err != nil {
				return "", fmt.Errorf("previous version %s: %w", r.res.PreviousVersion, err)
			}
		}
		return fmt.Sprintf("back on %s, healthy and verified", r.res.PreviousVersion), nil
	})
}

// describe says what the LB reports of t, e.g. "deregistered, nothing in
// flight" or "healthy, in rotation, 0 in flight".
func describe(t lbport.Target) string {
	if !t.Registered() {
		return "deregistered, nothing in flight"
	}
	return lbport.Describe(t)
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

func anyRunning(st agentapi.Status) bool {
	for _, s := range st.Services {
		if s.Running {
			return true
		}
	}
	return false
}

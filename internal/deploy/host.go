package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
)

// host deploys to one host: lease, publish, drain, stop, start, healthy,
// verify (look twice). The host lease stays held afterwards, until the whole
// fleet passed the sweep. On failure after the host was changed it rolls the
// host back and returns a *StepError.
func (d *Deployer) host(ctx context.Context, st *hostState) error {
	h := st.h
	st.res = &HostResult{Host: h.Name, PreviousVersion: st.prevVersion}
	if st.prevVersion != "" {
		// The bound is for replacing a running version; a first rollout
		// drains nothing and has none.
		st.res.BoundSeconds = d.bound.Total().Seconds()
	}
	begin := d.clock.Now()
	defer func() { st.res.Seconds = d.clock.Since(begin).Seconds() }()

	// Lease: refused means nothing was touched on this host.
	if err := d.phase(ctx, st, PhaseLease, func(ctx context.Context) (string, error) {
		return "", d.acquireHostLease(ctx, st)
	}); err != nil {
		return d.fail(st, PhaseLease, err)
	}
	hostCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The lease is kept until the fleet's verdict — through a Ctrl-C'd
	// deploy's rollback too — so the keeper outlives this function; while
	// the host deploys, losing the lease cancels it.
	kctx, stopKeep := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { st.lease.keep(kctx, func(err error) { cancel(err) }) })
	st.stopKeep = func() {
		stopKeep()
		wg.Wait()
	}

	phases := []struct {
		p  Phase
		fn func(context.Context) (string, error)
	}{
		{PhasePublish, func(ctx context.Context) (string, error) { return d.publish(ctx, st) }},
		{PhaseDrain, func(ctx context.Context) (string, error) { return d.drain(ctx, st, PhaseDrain) }},
		{PhaseStop, func(ctx context.Context) (string, error) { return d.stop(ctx, st) }},
		{PhaseStart, func(ctx context.Context) (string, error) { return d.start(ctx, st) }},
		{PhaseHealthy, func(ctx context.Context) (string, error) { return d.putBack(ctx, st, PhaseHealthy) }},
		{PhaseVerify, func(ctx context.Context) (string, error) { return d.verify(ctx, st) }},
	}
	for _, ph := range phases {
		if err := d.phase(hostCtx, st, ph.p, ph.fn); err != nil {
			if cause := context.Cause(hostCtx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(err, cause) {
				err = fmt.Errorf("%w (%w)", err, cause)
			}
			if st.published || st.deregistered {
				st.moved = false
				return d.failRestore(ctx, st, ph.p, err)
			}
			return d.fail(st, ph.p, err)
		}
	}
	st.moved = st.published
	st.res.OK = true
	return nil
}

// acquireHostLease takes the host lease; the watchdog or the bootstrap may
// hold the host lock for a moment, so it waits for it up to one lease TTL.
func (d *Deployer) acquireHostLease(ctx context.Context, st *hostState) error {
	ttl := d.o.Config.Deploy.LeaseTTL
	begin := d.clock.Now()
	deadline := begin.Add(ttl)
	pr := d.progress(st.h.Name, PhaseLease)
	for {
		sent := d.clock.Now()
		l, err := call(d, ctx, st.h.Name, PhaseLease, "host lease", func(ctx context.Context) (agentapi.Lease, error) {
			return st.h.Agent.AcquireLease(ctx, false, d.o.Holder, ttl)
		})
		if err == nil {
			st.lease = newLease(st.h.Agent, false, st.h.Name, l, ttl, sent, d.clock)
			return nil
		}
		if !errors.Is(err, agentapi.ErrLeaseHeld) || !d.clock.Now().Before(deadline) {
			return err
		}
		pr.maybe(d.clock.Since(begin), func() string { return fmt.Sprintf("waiting for the host lock: %v", err) })
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-d.clock.After(10 * d.o.Poll):
		}
	}
}

// phase runs fn as phase p of st's host, timing it and emitting
// begin/end/fail.
func (d *Deployer) phase(ctx context.Context, st *hostState, p Phase, fn func(context.Context) (string, error)) error {
	begin := d.clock.Now()
	d.emit(st.h.Name, p, EventBegin, 0, "")
	detail, err := fn(ctx)
	el := d.clock.Since(begin)
	if err != nil && errors.Is(context.Cause(ctx), context.Canceled) {
		// Ctrl-C: say so rather than "context canceled" from deep inside.
		err = fmt.Errorf("interrupted: %w", context.Canceled)
	}
	st.res.Phases = append(st.res.Phases, PhaseTime{Phase: p, Seconds: el.Seconds()})
	if err != nil {
		d.emit(st.h.Name, p, EventFail, el, err.Error())
		return err
	}
	d.emit(st.h.Name, p, EventEnd, el, detail)
	return nil
}

func (d *Deployer) publish(ctx context.Context, st *hostState) (string, error) {
	rep, err := call(d, ctx, st.h.Name, PhasePublish, "publish", func(ctx context.Context) (agentapi.PublishReport, error) {
		return st.h.Agent.Publish(ctx, st.lease.id, st.h.Definition)
	})
	if err != nil {
		return "", err
	}
	// A retried publish whose first try landed reports "unchanged": what
	// counts is whether the host's current definition is now another one.
	st.published = rep.Current.Hash != st.prevHash
	return fmt.Sprintf("definition %s (%s)", short(rep.Current.Hash), rep.Current.Version), nil
}

// lbChange makes one change at the LB for st's host, fenced by its host
// lease: the lease is renewed right before the change, and the change is
// refused when the lease is gone or, by this deployer's clock, expired.
func (d *Deployer) lbChange(ctx context.Context, st *hostState, p Phase, what string, fn func(context.Context) error) error {
	return d.retry(ctx, st.h.Name, p, what, func(ctx context.Context) error {
		if err := st.lease.confirm(ctx); err != nil {
			if errors.Is(err, ErrLeaseLost) {
				return permanentError{fmt.Errorf("refused to %s: %w", what, err)}
			}
			return err
		}
		return fn(ctx)
	})
}

// drain takes the target out of rotation and waits until the LB reports it
// out and idle: provably stopped, bounded by drain.max.
func (d *Deployer) drain(ctx context.Context, st *hostState, p Phase) (string, error) {
	cfg := d.o.Config
	mode := cfg.Deploy.DrainMode
	if s, err := call(d, ctx, st.h.Name, p, "agent status", st.h.Agent.Status); err == nil && !anyRunning(s) {
		// A first rollout: nothing serves here, so nothing can be dropped;
		// fail-open may still list the empty target in rotation.
		return "nothing running on the host: nothing to drain", nil
	}
	if mode == fleet.DrainModeDeregister || mode == fleet.DrainModeBoth {
		if err := d.lbChange(ctx, st, p, "deregister from the load balancer", func(ctx context.Context) error {
			return d.lb.Deregister(ctx, ref(st.h))
		}); err != nil {
			return "", err
		}
		st.deregistered = true
	}
	if mode == fleet.DrainModeHealth || mode == fleet.DrainModeBoth {
		if err := d.retry(ctx, st.h.Name, p, "flip health", func(ctx context.Context) error {
			return st.h.Agent.Drain(ctx, st.lease.id, d.o.TargetServices)
		}); err != nil {
			return "", fmt.Errorf("flip health of %v: %w", d.o.TargetServices, err)
		}
	}
	t, err := d.waitDrained(ctx, st, p)
	if err != nil {
		return "", fmt.Errorf("load balancer did not take %s out of rotation: %w", st.h.Name, err)
	}
	return fmt.Sprintf("out of rotation (%s)", describe(t)), nil
}

func (d *Deployer) stop(ctx context.Context, st *hostState) (string, error) {
	done := d.whileWaiting(ctx, st.h.Name, PhaseStop, func(context.Context) string {
		return fmt.Sprintf("waiting for the agent to stop the services (stop grace period %v)", d.o.Config.Backend.StopGracePeriod)
	})
	rep, err := call(d, ctx, st.h.Name, PhaseStop, "stop", func(ctx context.Context) (agentapi.StopReport, error) {
		return st.h.Agent.Stop(ctx, st.lease.id)
	})
	done()
	if err != nil {
		return "", err
	}
	for _, s := range rep.Services {
		if s.Killed {
			st.res.Killed = append(st.res.Killed, s.Name)
			d.emit(st.h.Name, PhaseStop, EventNote, 0,
				fmt.Sprintf("%s ignored SIGTERM and was killed at its stop grace period (%.1fs)", s.Name, s.Seconds))
		}
	}
	return fmt.Sprintf("%d services stopped", len(rep.Services)), nil
}

func (d *Deployer) start(ctx context.Context, st *hostState) (string, error) {
	done := d.whileWaiting(ctx, st.h.Name, PhaseStart, d.startingDetail(st))
	rep, err := call(d, ctx, st.h.Name, PhaseStart, "start", func(ctx context.Context) (agentapi.StartReport, error) {
		return st.h.Agent.Start(ctx, st.lease.id)
	})
	done()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d services running", len(rep.Services)), nil
}

// startingDetail says which services the agent still waits for.
func (d *Deployer) startingDetail(st *hostState) func(context.Context) string {
	return func(ctx context.Context) string {
		s, err := st.h.Agent.Status(ctx)
		if err != nil {
			return fmt.Sprintf("waiting for the agent to start the services (status: %v)", err)
		}
		var waiting []string
		for _, svc := range s.Services {
			if svc.Running && svc.Health != agentapi.HealthHealthy && svc.Health != agentapi.HealthUnknown {
				waiting = append(waiting, svc.Name+" "+svc.Health)
			}
		}
		if len(waiting) == 0 {
			return "waiting for the agent to start the services"
		}
		return "waiting for the services to pass their health checks: " + strings.Join(waiting, ", ")
	}
}

// putBack registers the target again (fenced by the host lease) and waits
// until the LB reports it healthy and in rotation.
func (d *Deployer) putBack(ctx context.Context, st *hostState, p Phase) (string, error) {
	register := st.deregistered // out by this deploy's hand: no need to ask
	if !register {
		t, err := d.readTarget(ctx, st.h, p)
		if err != nil {
			return "", err
		}
		register = !t.Registered() || t.State == lbport.StateDraining
	}
	if register {
		if err := d.lbChange(ctx, st, p, "register with the load balancer", func(ctx context.Context) error {
			return d.lb.Register(ctx, ref(st.h))
		}); err != nil {
			return "", err
		}
		st.deregistered = false
	}
	t, err := d.waitTarget(ctx, st.h, p, healthyTimeout(d.o.Config), lbport.InService)
	if err != nil {
		return "", fmt.Errorf("load balancer did not report %s healthy: %w", st.h.Name, err)
	}
	return describe(t), nil
}

// verify is the look twice: every service of deploy.verify verified by the
// agent, then watched for min_healthy_time — the same instance, no exit, the
// LB reporting the target healthy throughout — verified again, and seen
// through the LB at the new version.
func (d *Deployer) verify(ctx context.Context, st *hostState) (string, error) {
	lk, err := d.lookTwice(ctx, st, d.o.Version, PhaseVerify)
	if err != nil {
		return "", err
	}
	st.baseline = lk
	if err := d.seeThroughLB(ctx, map[string]bool{st.h.Name: true}, d.o.Version); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s up %v and verified via agent and load balancer", d.o.Version, d.o.Config.Deploy.MinHealthyTime), nil
}

// look reads the host's status into a look at the verified services.
func (d *Deployer) look(ctx context.Context, h Host, p Phase) (look, error) {
	s, err := call(d, ctx, h.Name, p, "agent status", h.Agent.Status)
	if err != nil {
		return nil, err
	}
	return takeLook(s, d.o.Verify), nil
}

// lookTwice verifies the host at version, then watches it for
// min_healthy_time and verifies again; it returns the second look.
func (d *Deployer) lookTwice(ctx context.Context, st *hostState, version string, p Phase) (look, error) {
	h := st.h
	if err := d.verifyAgent(ctx, h, version); err != nil {
		return nil, err
	}
	first, err := d.look(ctx, h, p)
	if err != nil {
		return nil, err
	}
	window := d.o.Config.Deploy.MinHealthyTime
	agentEvery := min(max(window/8, d.o.Poll), time.Second)
	// The agent is asked every agentEvery whether the same instances still
	// run (an exit or a restart fails at once); the LB is read through the
	// deploy's Poller, with every other target being watched, so a look
	// costs no Describe call of its own.
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	wg.Go(func() { d.watchServices(lctx, ctx, h, p, first, window, agentEvery, cancel) })
	hw := newHealthyWindow(d.clock.Now(), window, healthyTimeout(d.o.Config))
	var mu sync.Mutex
	var up time.Duration
	var failed error
	cond := func(t lbport.Target) bool {
		step := hw.see(d.clock.Now(), t)
		mu.Lock()
		up = step.Up
		mu.Unlock()
		switch {
		case step.Verdict == windowFail:
			failed = fmt.Errorf("load balancer reports %s %s: not healthy for min_healthy_time %v within %v",
				h.Name, describe(t), window, hw.deadline.Sub(hw.start).Round(time.Millisecond))
			return true
		case step.Restarted:
			d.emit(h.Name, p, EventProgress, step.Up, fmt.Sprintf("load balancer reports %s after %.1fs of min_healthy_time %v: the look starts again once it is healthy", describe(t), step.Up.Seconds(), window))
		}
		return step.Verdict == windowDone
	}
	_, err = d.watchTarget(lctx, h, p, hw.limit(d.poller.Interval()), cond, func(t lbport.Target) string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("looking twice: every service up %.1fs of %v, load balancer reports %s", up.Seconds(), window, describe(t))
	})
	cancel(nil)
	wg.Wait()
	if err == nil {
		err = failed // set by cond before the wait returned
	}
	if err != nil {
		return nil, err
	}
	if err := d.verifyAgent(ctx, h, version); err != nil {
		return nil, err
	}
	second, err := d.look(ctx, h, p)
	if err != nil {
		return nil, err
	}
	if ch := changes(first, second); len(ch) > 0 {
		return nil, fmt.Errorf("did not stay up for min_healthy_time %v: %s", window, strings.Join(ch, "; "))
	}
	return second, nil
}

// watchServices looks at h every `every` until ctx ends, and cancels it
// (fail) when a service is no longer the instance of the first look or the
// agent cannot say. A look in progress when ctx ends runs to its end under
// callCtx (the host's context): a request abandoned mid-answer is a broken
// connection on the agent's side, which nothing gains from.
func (d *Deployer) watchServices(ctx, callCtx context.Context, h Host, p Phase, first look, window, every time.Duration, fail context.CancelCauseFunc) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.clock.After(every):
		}
		now, err := d.look(callCtx, h, p)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			fail(err)
			return
		}
		if ch := changes(first, now); len(ch) > 0 {
			fail(fmt.Errorf("did not stay up for min_healthy_time %v: %s", window, strings.Join(ch, "; ")))
			return
		}
	}
}

// lookAgain compares the host with the look taken when it was verified, asks
// the agent to verify it again, and waits (bounded) for the LB to report it
// healthy and in rotation.
func (d *Deployer) lookAgain(ctx context.Context, st *hostState, version string) error {
	now, err := d.look(ctx, st.h, PhaseRecheck)
	if err != nil {
		return err
	}
	if ch := changes(st.baseline, now); len(ch) > 0 {
		return fmt.Errorf("did not stay up since it was verified: %s", strings.Join(ch, "; "))
	}
	if err := d.verifyAgent(ctx, st.h, version); err != nil {
		return err
	}
	if _, err := d.waitTarget(ctx, st.h, PhaseRecheck, healthyTimeout(d.o.Config), lbport.InService); err != nil {
		return fmt.Errorf("load balancer does not report it healthy and in rotation: %w", err)
	}
	return nil
}

// healthyTimeout bounds the wait for the LB to call a returned target
// healthy: twice the healthy threshold's checks, each up to the timeout, plus
// one interval of phase.
func healthyTimeout(cfg *fleet.Config) time.Duration {
	hc := cfg.LoadBalancer.HealthCheck
	return 2*time.Duration(hc.HealthyThreshold)*(hc.Interval+hc.Timeout) + hc.Interval
}

// readTarget reports h's target from the deploy's next poll (with every
// other target being watched), retrying transient errors.
func (d *Deployer) readTarget(ctx context.Context, h Host, p Phase) (lbport.Target, error) {
	t, err := call(d, ctx, h.Name, p, "load balancer target", func(ctx context.Context) (lbport.Target, error) {
		ts, err := d.poller.Read(ctx, ref(h))
		if err != nil {
			return lbport.Target{}, err
		}
		return ts[0], nil
	})
	if err == nil {
		d.sawTarget(h.Name, p, t)
	}
	return t, err
}

// waitTarget waits until cond holds for the host's target or limit passes
// (the error then says what the LB last reported, or its last error), saying
// at least every 2s what the LB reports. The deploy's Poller asks for every
// host being waited on in one call per poll; throttling and network errors
// are retried at the next poll.
func (d *Deployer) waitTarget(ctx context.Context, h Host, p Phase, limit time.Duration, cond func(lbport.Target) bool) (lbport.Target, error) {
	return d.watchTarget(ctx, h, p, limit, cond, func(t lbport.Target) string { return "load balancer reports " + describe(t) })
}

// watchTarget is waitTarget with its own progress line: say tells what the
// LB last reported. cond runs on the Poller's goroutine, once per poll.
func (d *Deployer) watchTarget(ctx context.Context, h Host, p Phase, limit time.Duration, cond func(lbport.Target) bool, say func(lbport.Target) string) (lbport.Target, error) {
	begin := d.clock.Now()
	pr := d.progress(h.Name, p)
	var mu sync.Mutex
	var last lbport.Target
	seen := false
	watch := func(t lbport.Target) bool {
		d.sawTarget(h.Name, p, t)
		mu.Lock()
		last, seen = t, true
		mu.Unlock()
		return cond(t)
	}
	type result struct {
		t   lbport.Target
		err error
	}
	done := make(chan result, 1)
	go func() {
		t, err := d.poller.Wait(ctx, ref(h), limit, watch)
		done <- result{t, err}
	}()
	for {
		select {
		case r := <-done:
			return r.t, r.err
		case <-d.clock.After(progressEvery):
			mu.Lock()
			t, ok := last, seen
			mu.Unlock()
			pr.maybe(d.clock.Since(begin), func() string {
				if !ok {
					return "waiting for the load balancer to answer"
				}
				return say(t)
			})
		}
	}
}

// describe says what the LB reports of t, e.g. "deregistered, nothing in
// flight" or "unhealthy Target.FailedHealthChecks (1/2 checks passed), out
// of rotation, 0 in flight".
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

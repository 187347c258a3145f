package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

// ErrInvalid marks a request the agent refuses as bad input (HTTP 400/422):
// nothing was changed.
var ErrInvalid = errors.New("invalid request")

// ErrNothingPublished: the host has no current definition yet.
var ErrNothingPublished = errors.New("no definition has been published to this host")

// Publish makes the definition encoded in data the current one; the current
// one becomes previous. It does not start or stop anything. Errors: ErrInvalid
// (wrapped, with the definition's own problems) when data is not a valid
// definition.
func (a *Agent) Publish(ctx context.Context, data []byte) (agentapi.PublishReport, error) {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	d, err := definition.Decode(data)
	if err != nil {
		return agentapi.PublishReport{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if d.Host != "" && d.Host != a.cfg.Host {
		return agentapi.PublishReport{}, fmt.Errorf("%w: definition was resolved for host %q, this is %q", ErrInvalid, d.Host, a.cfg.Host)
	}
	// Pending until a start verifies it: a deploy that dies before leaves a
	// host known to be half deployed.
	changed, err := a.store.PublishPending(d)
	if err != nil {
		return agentapi.PublishReport{}, err
	}
	a.log.Info("definition published", "version", d.Version, "hash", d.Hash, "changed", changed)
	return agentapi.PublishReport{Current: agentapi.DefinitionRef{Version: d.Version, Hash: d.Hash}, Changed: changed}, nil
}

// Drain sends SIGTERM to the running instances of the named services (all
// running ones when names is empty) and returns at once: with the drain
// protocol their health checks now fail while they keep serving. Stop
// collects how they ended.
func (a *Agent) Drain(ctx context.Context, names []string) error {
	sts, err := a.rt.Status(ctx)
	if err != nil {
		return err
	}
	a.drainMu.Lock()
	defer a.drainMu.Unlock()
	for _, s := range sts {
		if !active(s) || (len(names) > 0 && !slices.Contains(names, s.Name)) {
			continue
		}
		if _, ok := a.draining[s.Name]; ok {
			continue
		}
		a.log.Info("draining", "service", s.Name, "instance", s.ID)
		a.draining[s.Name] = a.stopInBackground(s.Name)
	}
	return nil
}

// Stop stops every running service within its stop grace period (SIGTERM,
// SIGKILL at the deadline), including the ones a Drain already signalled, and
// reports how each ended.
func (a *Agent) Stop(ctx context.Context) (agentapi.StopReport, error) {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	return a.stopAll(ctx)
}

// stopInBackground stops service name within its grace period on the
// agent's background and returns where its outcome arrives. The stop
// outlives the request that asked for it: it runs to the service's grace
// period whatever happens to the caller. Once the agent is closing, the
// outcome is errClosing at once.
func (a *Agent) stopInBackground(name string) chan stopOutcome {
	ch := make(chan stopOutcome, 1)
	if !a.bg.Go(func() {
		res, err := a.rt.Stop(context.WithoutCancel(a.ctx), name, runtime.UseSpecGrace)
		ch <- stopOutcome{res, err}
	}) {
		ch <- stopOutcome{err: errClosing}
	}
	return ch
}

func (a *Agent) stopAll(ctx context.Context) (agentapi.StopReport, error) {
	sts, err := a.rt.Status(ctx)
	if err != nil {
		return agentapi.StopReport{}, err
	}
	a.drainMu.Lock()
	pending := a.draining
	a.draining = map[string]chan stopOutcome{}
	a.drainMu.Unlock()
	for _, s := range sts {
		if !active(s) {
			continue
		}
		if _, ok := pending[s.Name]; ok {
			continue
		}
		pending[s.Name] = a.stopInBackground(s.Name)
	}
	var rep agentapi.StopReport
	var errs []error
	names := make([]string, 0, len(pending))
	for n := range pending {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		var o stopOutcome
		select {
		case o = <-pending[n]:
		case <-ctx.Done():
			return rep, fmt.Errorf("waiting for %s to stop: %w", n, ctx.Err())
		}
		if o.err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", n, o.err))
			continue
		}
		if !o.res.WasRunning {
			continue
		}
		code := o.res.ExitCode
		rep.Services = append(rep.Services, agentapi.StopResult{Name: n, Killed: o.res.Killed, Seconds: o.res.Took.Seconds(), ExitCode: &code})
		if o.res.Killed {
			a.log.Warn("service outlived its stop grace period and was killed", "service", n, "took", o.res.Took)
		}
	}
	return rep, errors.Join(errs...)
}

// finishDrains waits for the stops a Drain started, so that what was draining
// is stopped before it is started again.
func (a *Agent) finishDrains(ctx context.Context) error {
	a.drainMu.Lock()
	pending := a.draining
	a.draining = map[string]chan stopOutcome{}
	a.drainMu.Unlock()
	for n, ch := range pending {
		select {
		case o := <-ch:
			if o.err != nil {
				return fmt.Errorf("stop %s: %w", n, o.err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Start starts every service of the current definition and waits until each
// runs its spec and answers its health check (or has none). A service that
// exits meanwhile fails the start at once, with its exit code.
func (a *Agent) Start(ctx context.Context) (agentapi.StartReport, error) {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	d, err := a.store.Current()
	if errors.Is(err, definition.ErrNotFound) {
		return agentapi.StartReport{}, ErrNothingPublished
	}
	if err != nil {
		return agentapi.StartReport{}, err
	}
	return a.startDef(ctx, d)
}

func (a *Agent) startDef(ctx context.Context, d *definition.Definition) (agentapi.StartReport, error) {
	begin := a.clock.Now()
	// Services start side by side: a host's start costs its slowest service,
	// not the sum (container starts take seconds each).
	errs := make([]error, len(d.Services))
	var wg sync.WaitGroup
	for i, svc := range d.Services {
		wg.Go(func() { errs[i] = a.startOne(ctx, svc) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return agentapi.StartReport{}, err
	}
	deadline := begin.Add(a.startTimeout(d))
	ready := map[string]float64{}
	for {
		sts, err := a.rt.Status(ctx)
		if err != nil {
			return agentapi.StartReport{}, err
		}
		checks, _ := runtime.Verify(d, sts)
		var waiting []string
		for _, c := range checks {
			if c.OK {
				if _, seen := ready[c.Name]; !seen {
					ready[c.Name] = a.clock.Since(begin).Seconds()
				}
				continue
			}
			if c.Status.SpecHash == mustSpec(d, c.Name) && c.Status.State == runtime.StateExited {
				return agentapi.StartReport{}, fmt.Errorf("%s (version %s) exited with code %d before answering its health check%s",
					c.Name, d.Version, c.Status.ExitCode, signalNote(c.Status.Signal))
			}
			waiting = append(waiting, fmt.Sprintf("%s: %s", c.Name, c.Reason))
		}
		if len(waiting) == 0 {
			break
		}
		if !a.clock.Now().Before(deadline) {
			return agentapi.StartReport{}, fmt.Errorf("not healthy within %v: %s", a.startTimeout(d), strings.Join(waiting, "; "))
		}
		select {
		case <-ctx.Done():
			return agentapi.StartReport{}, ctx.Err()
		case <-a.clock.After(startPoll(d)):
		}
	}
	var rep agentapi.StartReport
	for _, svc := range d.Services {
		rep.Services = append(rep.Services, agentapi.StartResult{Name: svc.Name, Seconds: ready[svc.Name]})
	}
	// Only now may the watchdog heal this definition: it ran whole here.
	if err := a.store.MarkVerified(d.Hash); err != nil && !errors.Is(err, definition.ErrNotCurrent) {
		return rep, fmt.Errorf("%s started, but recording that it runs whole failed: %w", d.Version, err)
	}
	a.log.Info("services started", "version", d.Version, "services", len(d.Services), "took", a.clock.Since(begin))
	return rep, nil
}

// startOne starts svc; another spec of it that still runs (a deploy that
// skipped stop, a manual start) is stopped within its grace first.
func (a *Agent) startOne(ctx context.Context, svc definition.Service) error {
	err := a.rt.Start(ctx, svc)
	if errors.Is(err, runtime.ErrConflict) {
		if _, serr := a.rt.Stop(ctx, svc.Name, runtime.UseSpecGrace); serr != nil {
			return fmt.Errorf("start %s: stop the other instance: %w", svc.Name, serr)
		}
		err = a.rt.Start(ctx, svc)
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", svc.Name, err)
	}
	return nil
}

// active reports whether an instance is running or being restarted by its
// platform (Docker's restart policy): either way, stopping the host must
// stop it.
func active(s runtime.ServiceStatus) bool {
	return s.Running() || s.State == runtime.StateRestarting
}

func mustSpec(d *definition.Definition, name string) string {
	s, _ := d.Service(name)
	return s.SpecHash()
}

func signalNote(sig string) string {
	if sig == "" {
		return ""
	}
	return " (" + sig + ")"
}

// startTimeout is the longest any service of d may take to turn healthy.
func (a *Agent) startTimeout(d *definition.Definition) time.Duration {
	if a.cfg.StartTimeout > 0 {
		return a.cfg.StartTimeout
	}
	longest := 10 * time.Second
	for _, s := range d.Services {
		if hc := s.Healthcheck; hc != nil {
			t := hc.StartPeriod + time.Duration(hc.Retries+1)*(hc.Interval+hc.Timeout)
			longest = max(longest, t)
		}
	}
	return longest
}

// startPoll is how often Start looks at the runtime: a fifth of the shortest
// health check interval, between 5ms and 250ms.
func startPoll(d *definition.Definition) time.Duration {
	p := 250 * time.Millisecond
	for _, s := range d.Services {
		if hc := s.Healthcheck; hc != nil {
			p = min(p, hc.StartInterval/5, hc.Interval/5)
		}
	}
	return max(p, 5*time.Millisecond)
}

// Verify checks the named services (all when empty) of the current definition
// against what the runtime runs: the definition's spec, running, healthy. With
// version set, the current definition must be that version. It changes nothing.
func (a *Agent) Verify(ctx context.Context, names []string, version string) (agentapi.VerifyReport, error) {
	d, err := a.store.Current()
	if errors.Is(err, definition.ErrNotFound) {
		return agentapi.VerifyReport{}, ErrNothingPublished
	}
	if err != nil {
		return agentapi.VerifyReport{}, err
	}
	sts, err := a.rt.Status(ctx)
	if err != nil {
		return agentapi.VerifyReport{}, err
	}
	checks, _ := runtime.Verify(d, sts)
	rep := agentapi.VerifyReport{OK: true, Definition: agentapi.DefinitionRef{Version: d.Version, Hash: d.Hash}}
	for _, n := range names {
		if _, ok := d.Service(n); !ok {
			rep.OK = false
			rep.Services = append(rep.Services, agentapi.ServiceCheck{Name: n, Reason: fmt.Sprintf("not in the current definition (%s has %s)", d.Version, strings.Join(d.Names(), ", "))})
		}
	}
	for _, c := range checks {
		if len(names) > 0 && !slices.Contains(names, c.Name) {
			continue
		}
		sc := agentapi.ServiceCheck{Name: c.Name, OK: c.OK, Reason: c.Reason}
		if version != "" && d.Version != version {
			sc.OK, sc.Reason = false, fmt.Sprintf("the host's current definition is version %s, not %s", d.Version, version)
		}
		rep.OK = rep.OK && sc.OK
		rep.Services = append(rep.Services, sc)
	}
	a.metrics.op("verify", nil)
	return rep, nil
}

// Rollback stops what runs, makes the previous definition current again —
// restored byte for byte, nothing deleted — and starts it.
func (a *Agent) Rollback(ctx context.Context) (agentapi.StartReport, error) {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	if _, err := a.store.Previous(); errors.Is(err, definition.ErrNotFound) {
		return agentapi.StartReport{}, fmt.Errorf("%w: there is no previous definition to roll back to", ErrInvalid)
	}
	if _, err := a.stopAll(ctx); err != nil {
		return agentapi.StartReport{}, err
	}
	d, err := a.store.Rollback()
	if err != nil {
		return agentapi.StartReport{}, err
	}
	a.log.Warn("rolled back", "to_version", d.Version, "hash", d.Hash)
	rep, err := a.startDef(ctx, d)
	if err != nil {
		return rep, err
	}
	rep.Version = d.Version
	rs := a.restoreStatus(ctx)
	rep.Restored = rs.Restored
	return rep, nil
}

// Commit records on the host lease leaseID that the whole fleet passed the
// deploy's final sweep on version, which must be the current definition
// (ErrInvalid otherwise, or when it never started whole here). From then on
// a lease that ends without release completes the release (recover).
func (a *Agent) Commit(leaseID, version string) error {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	refs, err := a.store.Refs()
	if err != nil {
		return err
	}
	d, err := a.store.Current()
	if errors.Is(err, definition.ErrNotFound) {
		return ErrNothingPublished
	}
	if err != nil {
		return err
	}
	if d.Version != version || refs.HalfDeployed() {
		return fmt.Errorf("%w: commit of version %q: the current definition is version %s (half deployed: %v)", ErrInvalid, version, d.Version, refs.HalfDeployed())
	}
	if err := a.hostLease.commit(leaseID, restoreTarget{Version: d.Version, Hash: d.Hash}); err != nil {
		return err
	}
	a.log.Info("deploy committed: the whole fleet passed its final sweep", "version", d.Version, "hash", short(d.Hash))
	return nil
}

// MarkGood records the current definition as the host's last known good.
func (a *Agent) MarkGood(ctx context.Context) error {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	d, err := a.store.Current()
	if errors.Is(err, definition.ErrNotFound) {
		return ErrNothingPublished
	}
	if err != nil {
		return err
	}
	if err := a.store.MarkGood(d.Hash); err != nil {
		return err
	}
	a.prune(ctx)
	return nil
}

// prune drops the stopped instances (processes' records, containers) of
// every version but the current, the previous and the last known good, now
// that the current one is verified. A failure is logged, never fatal: it
// only leaves old stopped instances behind.
func (a *Agent) prune(ctx context.Context) {
	var keep []string
	for _, ref := range []definition.Ref{definition.RefCurrent, definition.RefPrevious, definition.RefLastGood} {
		if d, err := a.store.Get(ref); err == nil {
			keep = append(keep, d.SpecHashes()...)
		}
	}
	ids, err := a.rt.Prune(ctx, keep...)
	if err != nil {
		a.log.Warn("prune old instances", "err", err)
		return
	}
	if len(ids) > 0 {
		a.log.Info("pruned old stopped instances", "ids", ids)
	}
}

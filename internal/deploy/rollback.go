package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/lbport"
)

// fail records the failure of phase p on a host that was not changed.
func (d *Deployer) fail(st *hostState, p Phase, err error) error {
	st.res.Failed, st.res.Error = p, err.Error()
	return &StepError{Host: st.h.Name, Phase: p, Err: err}
}

// failRestore records the failure of phase p on a host that was changed and
// rolls it back.
func (d *Deployer) failRestore(ctx context.Context, st *hostState, p Phase, err error) error {
	st.res.Failed, st.res.Error = p, err.Error()
	se := &StepError{Host: st.h.Name, Phase: p, Err: err}
	if rbErr := d.restore(ctx, st, []string{st.h.Name}); rbErr != nil {
		se.RollbackErr = rbErr
	} else {
		se.RolledBack = true
		st.res.RolledBack = true
	}
	return se
}

// rollbackBudget bounds one host's rollback: drain, stop, start, healthy,
// and the look twice.
func (d *Deployer) rollbackBudget() time.Duration {
	c := d.o.Config
	return 2*c.Drain.Max + 2*healthyTimeout(c) + c.Backend.StopGracePeriod + c.Deploy.MinHealthyTime + 2*d.o.RetryFor
}

// restore returns one host to the version it ran before this deploy, with
// the same handshake as the deploy: the target taken out of rotation and
// drained (if it is in rotation), the previous definition restored and
// started, the target put back, healthy, and the previous version verified
// by looking twice. A Ctrl-C'd deploy still restores, bounded in time. When
// the steps fail, the agent is asked whether the host is restored anyway:
// only a host the agent does not report restored is a failed rollback.
func (d *Deployer) restore(ctx context.Context, st *hostState, batch []string) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.rollbackBudget())
	defer cancel()
	if cause := context.Cause(ctx); errors.Is(cause, ErrLeaseLost) {
		return cause
	}
	if err := st.lease.isLost(); err != nil {
		return err
	}
	err := d.phase(rctx, st, PhaseRollback, func(ctx context.Context) (string, error) {
		return d.restoreSteps(ctx, st, batch)
	})
	if err == nil {
		st.moved, st.published = false, false
		return nil
	}
	if errors.Is(err, ErrLeaseLost) {
		return err
	}
	if st.prevVersion != "" && d.verifyAgent(rctx, st.h, st.prevVersion) == nil {
		d.emit(st.h.Name, PhaseRollback, EventNote, 0, fmt.Sprintf("the agent reports %s restored and verified on %s despite: %v", st.h.Name, st.prevVersion, err))
		st.moved, st.published = false, false
		return nil
	}
	return err
}

func (d *Deployer) restoreSteps(ctx context.Context, st *hostState, batch []string) (string, error) {
	h := st.h
	if st.published && st.prevVersion == "" {
		// A first rollout: the host ran nothing before, so nothing is
		// restored; the new version's services are stopped.
		if _, err := call(d, ctx, h.Name, PhaseRollback, "stop", func(ctx context.Context) (agentapi.StopReport, error) {
			return h.Agent.Stop(ctx, st.lease.id)
		}); err != nil {
			return "", fmt.Errorf("stop the new services: %w", err)
		}
		return "the host ran nothing before this deploy: its new services were stopped", nil
	}
	if st.published {
		t, err := d.readTarget(ctx, h, PhaseRollback)
		if err != nil {
			return "", err
		}
		if t.Registered() && t.State != lbport.StateDraining {
			// It serves, or may again by itself (an unhealthy target turns
			// healthy after its checks pass): the same drain as the
			// deploy's, after the same capacity check.
			if _, err := d.waitCapacity(ctx, h.Name, PhaseRollback, batch); err != nil {
				return "", err
			}
			if _, err := d.drain(ctx, st, PhaseRollback); err != nil {
				return "", err
			}
		}
		if err := d.agentRollback(ctx, st); err != nil {
			return "", fmt.Errorf("restore previous definition: %w", err)
		}
	}
	if _, err := d.putBack(ctx, st, PhaseRollback); err != nil {
		return "", err
	}
	if st.prevVersion != "" {
		if _, err := d.lookTwice(ctx, st, st.prevVersion, PhaseRollback); err != nil {
			return "", fmt.Errorf("previous version %s: %w", st.prevVersion, err)
		}
	}
	return fmt.Sprintf("back on %s, healthy, up %v and verified", st.prevVersion, d.o.Config.Deploy.MinHealthyTime), nil
}

// agentRollback asks the agent to restore the previous definition. Rollback
// swaps current and previous, so it is not retried blindly: after a
// transient failure the host's status says whether the swap happened, and
// if it did only the (idempotent) start is repeated.
func (d *Deployer) agentRollback(ctx context.Context, st *hostState) error {
	h := st.h
	done := d.whileWaiting(ctx, h.Name, PhaseRollback, func(ctx context.Context) string {
		return "waiting for the agent to restore " + st.prevVersion + ": " + d.startingDetail(st)(ctx)
	})
	defer done()
	return d.retry(ctx, h.Name, PhaseRollback, "rollback", func(ctx context.Context) error {
		s, err := h.Agent.Status(ctx)
		if err != nil {
			return err
		}
		if c := s.Definitions.Current; c != nil && c.Hash == st.prevHash {
			_, err := h.Agent.Start(ctx, st.lease.id)
			return err
		}
		_, err = h.Agent.Rollback(ctx, st.lease.id)
		return err
	})
}

// rollbackFleet returns every moved host to its previous version, batch by
// batch in deploy order, and says so in the error it returns with cause.
func (d *Deployer) rollbackFleet(ctx context.Context, res *Result, cause error, moved []*hostState) error {
	var todo []*hostState
	for _, st := range moved {
		if st.moved {
			todo = append(todo, st)
		}
	}
	if len(todo) == 0 {
		return cause
	}
	if errors.Is(context.Cause(ctx), ErrLeaseLost) || errors.Is(cause, ErrLeaseLost) {
		return d.abandon(cause, todo)
	}
	begin := d.clock.Now()
	names := make([]string, len(todo))
	for i, st := range todo {
		names[i] = st.h.Name
	}
	d.emit("", PhaseFleetRollback, EventBegin, 0, fmt.Sprintf("rolling %s back: %v", strings.Join(names, ", "), cause))
	batch := max(d.o.Config.Deploy.BatchSize, 1)
	var failed []string
	for i := 0; i < len(todo); i += batch {
		group := todo[i:min(i+batch, len(todo))]
		errs := make([]error, len(group))
		bnames := make([]string, len(group))
		for j, st := range group {
			bnames[j] = st.h.Name
		}
		var wg sync.WaitGroup
		for j, st := range group {
			wg.Go(func() { errs[j] = d.restore(ctx, st, bnames) })
		}
		wg.Wait()
		for j, st := range group {
			if errs[j] != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", st.h.Name, errs[j]))
				continue
			}
			st.res.RolledBack = true
			st.res.OK = false
			if st.res.Error == "" {
				st.res.Error = "rolled back with the fleet: " + cause.Error()
			}
			res.RolledBack = append(res.RolledBack, st.h.Name)
		}
	}
	el := d.clock.Since(begin)
	if len(failed) > 0 {
		err := fmt.Errorf("%w: %s", ErrFleetRollbackFailed, strings.Join(failed, "; "))
		d.emit("", PhaseFleetRollback, EventFail, el, err.Error())
		return errors.Join(cause, err)
	}
	msg := fmt.Sprintf("%s back on their previous version, healthy and verified", strings.Join(names, ", "))
	d.emit("", PhaseFleetRollback, EventEnd, el, msg)
	return errors.Join(cause, fmt.Errorf("%w: %s", ErrFleetRolledBack, msg))
}

package publish

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// ErrInterrupted wraps the error of a publish the operator interrupted (its
// context ended) and that then finished safely: blue-green dropped the new
// machines, in place restored the last good release.
var ErrInterrupted = errors.New("publish interrupted")

// ErrAborted wraps the error of a publish whose safe finish was itself cut
// off (Request.Abort closed: a second signal). Its message says what state
// was left and the command that repairs it.
var ErrAborted = errors.New("publish aborted")

// abortable returns a context that outlives ctx (the first interruption)
// and ends only when abort is closed.
func abortable(ctx context.Context, abort <-chan struct{}) (context.Context, context.CancelFunc) {
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if abort == nil {
		return fctx, cancel
	}
	go func() {
		select {
		case <-abort:
			cancel()
		case <-fctx.Done():
		}
	}()
	return fctx, cancel
}

// RepairCommand is the command that finishes what an aborted publish left:
// the reconciler restores the last good release in place of an interrupted
// one (or judges a pending one).
const RepairCommand = "mythex publish reconcile"

// interrupt finishes a publish the operator interrupted, quickly and
// safely, on fctx (which only the abort ends): blue-green removes the new
// machines — the serving ones never stopped; in place restores the last
// good release (with none, the new release's machines are left running:
// a crashing app beats none). The release is recorded as interrupted.
func (g *Gate) interrupt(fctx, ctx context.Context, rel Release, lastGood Release, hasGood bool, req Request, t0 time.Time) (Result, error) {
	app := rel.App
	cause := context.Cause(ctx)
	if cause == nil {
		cause = context.Canceled
	}
	g.step(app, rel.ID, t0, "interrupted (%v): undoing %s before exiting; interrupt again to stop at once", cause, rel.ID)
	rel.Interrupted = true
	res := Result{Verdict: Verdict{Status: StatusUnknown, Reasons: []string{"interrupted by the operator before a verdict"}}}
	if rel.Verdict != nil {
		res.Verdict.Machines, res.Verdict.Looks = rel.Verdict.Machines, rel.Verdict.Looks
	}
	var undone string
	var undoErr error
	switch {
	case req.Strategy == StrategyBlueGreen:
		g.discard(fctx, app, rel.Machines)
		undone = fmt.Sprintf("its %d new machine(s) were removed; the serving machines never stopped serving", len(rel.Machines))
	case hasGood && len(rel.Machines) > 0:
		rb := g.restore(fctx, rel, lastGood, t0)
		res.Rollback = rb
		if rb.Error != "" {
			undoErr = errors.New(rb.Error)
		} else {
			rel.RolledBackTo = lastGood.ID
			undone = fmt.Sprintf("rolled back to the last good release %s in %s", lastGood.ID, rb.Took.Round(time.Millisecond))
		}
	case len(rel.Machines) == 0:
		undone = "no machine had been changed"
	default:
		undone = "there is no known good release to restore: its machines were left running"
	}
	rel.UpdatedAt = g.clock.Now()
	if fctx.Err() != nil || undoErr != nil {
		// Cut off (second signal) or the restore did not complete: leave
		// the release pending and marked interrupted, so the reconciler
		// finishes the undoing.
		rel.Status = ReleasePending
		state := g.describeState(context.WithoutCancel(fctx), app)
		why := "aborted by a second signal"
		if fctx.Err() == nil {
			why = "the undoing did not complete: " + undoErr.Error()
		}
		rel.Reason = fmt.Sprintf("interrupted before a verdict; %s. Left: %s", why, state)
		_ = g.store.Save(context.WithoutCancel(fctx), rel)
		res.Release, res.Elapsed = rel, g.clock.Since(t0)
		return res, fmt.Errorf("%w: %s of %s %s; machines: %s; repair with `%s` (it restores the last good release in place of %s)",
			ErrAborted, rel.ID, app, why, state, RepairCommand, rel.ID)
	}
	rel.Status = ReleaseInterrupted
	rel.Reason = "interrupted by the operator before a verdict; " + undone
	if err := g.store.Save(context.WithoutCancel(fctx), rel); err != nil {
		return Result{}, err
	}
	if rel.RolledBackTo != "" {
		if err := g.store.SetCurrent(context.WithoutCancel(fctx), app, rel.RolledBackTo); err != nil {
			return Result{}, err
		}
	}
	g.step(app, rel.ID, t0, "%s", rel.Reason)
	res.Release, res.Elapsed = rel, g.clock.Since(t0)
	return res, fmt.Errorf("%w: %s of %s: %s", ErrInterrupted, rel.ID, app, undone)
}

// describeState lists app's machines and what they run, for a message
// after an abort; bounded by one call timeout.
func (g *Gate) describeState(ctx context.Context, app string) string {
	cctx, cancel := g.callCtx(ctx)
	defer cancel()
	ms, err := g.p.List(cctx, app)
	if err != nil {
		return fmt.Sprintf("unknown (the platform did not answer: %v)", err)
	}
	if len(ms) == 0 {
		return "none"
	}
	var parts []string
	for _, m := range ms {
		parts = append(parts, fmt.Sprintf("%s %s on %s", m.ID, m.State, orNone(m.Release())))
	}
	return strings.Join(parts, ", ")
}

// SecondSignal returns a channel closed on the second SIGINT/SIGTERM of a
// publish: the first one ends ctx (the root command's signal context) and
// the gate finishes safely; the second closes the channel and the gate stops
// at once (Request.Abort). stop unregisters.
func SecondSignal(ctx context.Context) (<-chan struct{}, func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	abort := make(chan struct{})
	done := make(chan struct{})
	go func() {
		n := 0
		if ctx.Err() != nil {
			n = 1 // the first signal already ended ctx
		}
		for {
			select {
			case <-ch:
				n++
				if n >= 2 {
					close(abort)
					return
				}
			case <-done:
				return
			}
		}
	}()
	return abort, func() { signal.Stop(ch); close(done) }
}

package publish

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/platform"
)

// Reconciler re-checks releases after the gate has judged them: a live
// release for crashes that began after it went live, a pending one (an
// unknown verdict) to finish its judgement. A late failure rolls back to the
// last known good release instead of taking the app down — the write-up's
// reconciler failed the deployment and the whole site served 404 — and the
// reason is recorded on the release.
type Reconciler struct {
	g *Gate
}

// NewReconciler returns a reconciler acting through g (its platform, router,
// store, clock and timings).
func NewReconciler(g *Gate) *Reconciler { return &Reconciler{g: g} }

// Action is what a reconcile check did.
type Action string

// Reconcile actions.
const (
	// ActionNone: the release stays as it was (still live, or still unknown).
	ActionNone Action = "none"
	// ActionRolledBack: a late failure; the last good release was restored.
	ActionRolledBack Action = "rolled_back"
	// ActionFailed: a late failure with nothing to restore; the machines were
	// left running (not stopped, not removed).
	ActionFailed Action = "failed"
	// ActionPromoted: a pending release was judged live and now serves.
	ActionPromoted Action = "promoted"
	// ActionSkipped: the app was locked by a publish, or on another platform.
	ActionSkipped Action = "skipped"
)

// Check is the outcome of re-checking one app.
type Check struct {
	App     string        `json:"app"`
	Release string        `json:"release,omitempty"`
	Was     ReleaseStatus `json:"was,omitempty"`
	Verdict *Verdict      `json:"verdict,omitempty"`
	Action  Action        `json:"action"`
	// Rollback reports the restore of a late failure.
	Rollback *Rollback `json:"rollback,omitempty"`
	// Note says why a check was skipped or could not finish.
	Note string `json:"note,omitempty"`
}

// RunOnce checks every app with releases on the gate's platform, one after
// the other. An app locked by a running publish is skipped. The error is
// non-nil only when the store could not be read or ctx ended.
func (r *Reconciler) RunOnce(ctx context.Context) ([]Check, error) {
	all, err := r.g.store.List(ctx, "")
	if err != nil {
		return nil, err
	}
	var apps []string
	seen := map[string]bool{}
	for _, rel := range all {
		if !seen[rel.App] {
			seen[rel.App] = true
			apps = append(apps, rel.App)
		}
	}
	var out []Check
	for _, app := range apps {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		out = append(out, r.checkApp(ctx, app))
	}
	return out, nil
}

// Run calls RunOnce now and then again each time interval has passed since
// the previous round ended, until ctx is done, giving each round's checks to
// report (which may be nil). A panic in a round is recovered and logged; the
// loop goes on. It returns ctx's error.
func (r *Reconciler) Run(ctx context.Context, every time.Duration, report func([]Check, error)) error {
	if every <= 0 {
		return fmt.Errorf("%w: reconcile interval %s must be positive", ErrInvalid, every)
	}
	for {
		checks, err := r.round(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if report != nil {
			report(checks, err)
		}
		if err := r.g.sleep(ctx, every); err != nil {
			return err
		}
	}
}

func (r *Reconciler) round(ctx context.Context) (checks []Check, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.g.log.Error("reconcile round panicked", "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("reconcile round panicked: %v", p)
		}
	}()
	return r.RunOnce(ctx)
}

func (r *Reconciler) checkApp(ctx context.Context, app string) Check {
	g := r.g
	c := Check{App: app, Action: ActionNone}
	fl, err := g.lock(app)
	if err != nil {
		c.Action, c.Note = ActionSkipped, err.Error()
		return c
	}
	defer fl.Unlock()
	defer g.releaseLeases(ctx, app)
	rels, err := g.store.List(ctx, app)
	if err != nil || len(rels) == 0 {
		c.Action, c.Note = ActionSkipped, fmt.Sprint(err)
		return c
	}
	if newest := rels[0]; newest.Status == ReleasePending {
		if newest.Platform != g.p.Name() {
			c.Action, c.Note = ActionSkipped, "release "+newest.ID+" is on platform "+newest.Platform
			return c
		}
		return r.finishPending(ctx, newest)
	}
	cur, ok, err := g.store.Current(ctx, app)
	switch {
	case err != nil:
		c.Action, c.Note = ActionSkipped, err.Error()
	case !ok:
		c.Note = "no release serves"
	case cur.Platform != g.p.Name():
		c.Action, c.Note = ActionSkipped, "release "+cur.ID+" is on platform "+cur.Platform
	case cur.Status != ReleaseLive:
		c.Release, c.Note = cur.ID, "the serving release is "+string(cur.Status)
	default:
		return r.recheck(ctx, cur)
	}
	return c
}

// recheck looks at a live release again. Crashes count from the moment it
// went live; the previous round's look is the baseline, so a slow crash loop
// (one crash per round) is a newer crash than the one already seen — failed.
// A healthy release is decided in two looks; one that crashed recently is
// watched until it has stayed up for the stable window again.
func (r *Reconciler) recheck(ctx context.Context, rel Release) Check {
	g := r.g
	c := Check{App: rel.App, Release: rel.ID, Was: rel.Status, Action: ActionNone}
	now := g.clock.Now()
	var prior []Look
	if rel.LastLook != nil {
		prior = []Look{*rel.LastLook}
	}
	// A release restored by a rollback is judged from the write that
	// restored it, never from the crashes of the release it replaced; a
	// machine not yet back on it is "not yet".
	all, err := g.store.List(ctx, rel.App)
	if err != nil {
		c.Note = err.Error()
		return c
	}
	since, before, replacedAt := restoredTimes(rel, all)
	if rel.LastLook != nil && before != nil && !rel.LastLook.At.After(replacedAt) {
		// The last look predates the release that replaced it: no baseline
		// (its launch/update events would give the judge the old t0).
		prior = nil
	}
	v, looks, err := g.lookLoop(ctx, judgement{
		app: rel.App, release: rel.ID, image: rel.Config.Image, machines: rel.Judged(), t0: rel.LiveAt,
		deadline: now.Add(g.opts.StableFor + g.opts.ReconcileWindow), health: rel.Health, appProbe: rel.Strategy == StrategyInPlace,
		policy: g.opts.policy(), prior: prior, since: since, before: before,
	})
	c.Verdict = &v
	if err != nil {
		c.Note = err.Error()
		return c
	}
	if len(looks) > 0 {
		l := looks[len(looks)-1]
		rel.LastLook, rel.CheckedAt = &l, g.clock.Now()
	}
	switch v.Status {
	case StatusFailed:
		return r.lateFailure(ctx, rel, v, c)
	case StatusUnknown:
		c.Note = "could not check: " + strings.Join(v.Reasons, "; ")
	}
	rel.UpdatedAt = g.clock.Now()
	if err := g.store.Save(ctx, rel); err != nil {
		c.Note = err.Error()
	}
	return c
}

// lateFailure restores the last good release in place of rel, which failed
// after going live.
func (r *Reconciler) lateFailure(ctx context.Context, rel Release, v Verdict, c Check) Check {
	g := r.g
	why := fmt.Sprintf("late failure found by the reconciler at %s, after %s live: %s",
		g.clock.Now().UTC().Format(time.RFC3339), g.clock.Since(rel.LiveAt).Round(time.Second), strings.Join(v.Reasons, "; "))
	g.step(rel.App, rel.ID, rel.LiveAt, "%s", why)
	target, ok, err := g.store.LastGood(ctx, rel.App, rel.ID)
	rel.Verdict, rel.Reason, rel.UpdatedAt = &v, why, g.clock.Now()
	switch {
	case err != nil:
		c.Note = err.Error()
		return c
	case !ok:
		rel.Status = ReleaseFailed
		rel.Reason += "; no known good release to roll back to: its machines were left running rather than taking the app down"
		c.Action = ActionFailed
	default:
		rb := g.restore(context.WithoutCancel(ctx), rel, target, rel.LiveAt)
		c.Rollback = rb
		rel.Status, rel.RolledBackTo = statusAfter(rb), rb.To
		if rb.Error != "" {
			rel.Reason += "; rollback to " + target.ID + " did not complete: " + rb.Error
			c.Action = ActionFailed
		} else {
			c.Action = ActionRolledBack
		}
	}
	if err := g.store.Save(context.WithoutCancel(ctx), rel); err != nil {
		c.Note = err.Error()
	}
	if rel.Status == ReleaseRolledBack {
		if err := g.store.SetCurrent(context.WithoutCancel(ctx), rel.App, rel.RolledBackTo); err != nil {
			c.Note = err.Error()
		}
	}
	return c
}

// finishPending judges a release left pending (an unknown verdict, or an
// interrupted publish) afresh: live promotes it, failed rolls it back,
// unknown leaves it.
func (r *Reconciler) finishPending(ctx context.Context, rel Release) Check {
	g := r.g
	c := Check{App: rel.App, Release: rel.ID, Was: rel.Status, Action: ActionNone}
	if rel.Interrupted {
		// The operator interrupted it and the undoing was cut off: finish
		// the undoing, never promote it.
		lastGood, hasGood, err := g.store.LastGood(ctx, rel.App, rel.ID)
		if err != nil {
			c.Note = err.Error()
			return c
		}
		res, err := g.fail(context.WithoutCancel(ctx), rel, lastGood, hasGood, Request{App: rel.App, Strategy: rel.Strategy, Health: rel.Health}, rel.CreatedAt,
			Verdict{Status: StatusFailed, Reasons: []string{"the publish was interrupted and its undoing cut off; finishing it"}})
		if err != nil {
			c.Note = err.Error()
			return c
		}
		c.Verdict, c.Rollback, c.Action = &res.Verdict, res.Rollback, ActionFailed
		if res.Release.Status == ReleaseRolledBack {
			c.Action = ActionRolledBack
		}
		return c
	}
	if len(rel.Machines) == 0 {
		res, _ := g.fail(context.WithoutCancel(ctx), rel, Release{}, false, Request{Strategy: rel.Strategy}, rel.CreatedAt,
			Verdict{Status: StatusFailed, Reasons: []string{"the publish ended before it created any machine"}})
		c.Verdict, c.Action = &res.Verdict, ActionFailed
		return c
	}
	now := g.clock.Now()
	v, _, err := g.lookLoop(ctx, judgement{
		app: rel.App, release: rel.ID, image: rel.Config.Image, machines: rel.Judged(), t0: rel.CreatedAt,
		deadline: now.Add(g.opts.StableFor + g.opts.ReconcileWindow), health: rel.Health,
		appProbe: rel.Strategy == StrategyInPlace, serving: rel.Strategy == StrategyInPlace,
		policy: g.opts.policy(), since: rel.Since,
	})
	c.Verdict = &v
	if err != nil {
		c.Note = err.Error()
		return c
	}
	req := Request{App: rel.App, Strategy: rel.Strategy, Health: rel.Health}
	switch v.Status {
	case StatusLive:
		var old []platform.Machine
		if rel.Strategy == StrategyBlueGreen {
			cur, hasCur, err := g.store.Current(ctx, rel.App)
			if err != nil {
				c.Note = err.Error()
				return c
			}
			cctx, cancel := g.callCtx(ctx)
			ms, err := g.p.List(cctx, rel.App)
			cancel()
			if err != nil {
				c.Note = err.Error()
				return c
			}
			for _, m := range servingMachines(ms, cur, hasCur) {
				if m.Release() != rel.ID {
					old = append(old, m)
				}
			}
		}
		res, err := g.goLive(ctx, rel, v, old, req, rel.CreatedAt)
		if err != nil {
			c.Note = err.Error()
			return c
		}
		c.Action = ActionPromoted
		if res.Release.Status != ReleaseLive {
			c.Action, c.Rollback = ActionRolledBack, res.Rollback
		}
	case StatusFailed:
		lastGood, hasGood, err := g.store.LastGood(ctx, rel.App, rel.ID)
		if err != nil {
			c.Note = err.Error()
			return c
		}
		res, err := g.fail(context.WithoutCancel(ctx), rel, lastGood, hasGood, req, rel.CreatedAt, v)
		if err != nil {
			c.Note = err.Error()
			return c
		}
		c.Rollback = res.Rollback
		c.Action = ActionFailed
		if res.Release.Status == ReleaseRolledBack {
			c.Action = ActionRolledBack
		}
	default:
		c.Note = "still unknown: " + strings.Join(v.Reasons, "; ")
	}
	return c
}

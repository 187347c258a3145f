package publish

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/platform"
)

// Request is one publish.
type Request struct {
	// App is the app's name: lower-case letters, digits and dashes. Required.
	App string
	// Config is what the release runs. Config.Image is required.
	Config platform.Config
	// Machines is how many machines to create when the app has none serving.
	// Default 1.
	Machines int
	// Strategy is bluegreen or inplace; empty picks bluegreen when the gate
	// has a router, else inplace.
	Strategy Strategy
	// Health is how the app's health is checked. Path defaults to /healthz.
	Health Health
	// NoRollback leaves a failed release in place instead of restoring the
	// last good one (for releases that migrated state the old version cannot
	// read).
	NoRollback bool
	// Abort, when closed, stops even the safe finish after an interruption
	// (the operator's second signal). Nil: never.
	Abort <-chan struct{}
}

var appName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidateAppName returns an error matching ErrInvalid unless name is an app
// name: 1–63 lower-case letters, digits and dashes, not starting with a dash
// (a Fly app name's shape).
func ValidateAppName(name string) error {
	if !appName.MatchString(name) {
		return fmt.Errorf("%w: app %q: give a name of lower-case letters, digits and dashes (e.g. --app api)", ErrInvalid, name)
	}
	return nil
}

// normalize validates r and applies defaults. Errors match ErrInvalid and
// name the field.
func (g *Gate) normalize(r Request) (Request, error) {
	bad := func(format string, args ...any) (Request, error) {
		return r, fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	if err := ValidateAppName(r.App); err != nil {
		return r, err
	}
	if err := r.Config.Validate(); err != nil {
		return bad("%v", err)
	}
	if r.Machines < 0 {
		return bad("machines: %d is negative", r.Machines)
	}
	if r.Machines == 0 {
		r.Machines = 1
	}
	switch r.Strategy {
	case "":
		r.Strategy = StrategyInPlace
		if g.router != nil {
			r.Strategy = StrategyBlueGreen
		}
	case StrategyBlueGreen:
		if g.router == nil {
			return bad("strategy bluegreen needs a router (the load balancer's admin API, --lb-admin); use --strategy inplace without one")
		}
	case StrategyInPlace:
	default:
		return bad("strategy %q: use bluegreen or inplace", r.Strategy)
	}
	if r.Health.Path == "" {
		r.Health.Path = "/healthz"
	}
	if !strings.HasPrefix(r.Health.Path, "/") {
		return bad("health path %q must start with /", r.Health.Path)
	}
	if r.Health.AppURL != "" {
		u, err := url.Parse(r.Health.AppURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("health URL %q: give an absolute http(s) URL such as https://api.fly.dev/healthz", r.Health.AppURL)
		}
	}
	return r, nil
}

// Result is the outcome of a publish.
type Result struct {
	// Release is the release as stored at the end.
	Release Release `json:"release"`
	// Verdict is the gate's verdict.
	Verdict Verdict `json:"verdict"`
	// Rollback reports the restore after a failed verdict; nil when none ran.
	Rollback *Rollback `json:"rollback,omitempty"`
	// Elapsed is the whole publish's duration.
	Elapsed time.Duration `json:"elapsed"`
}

// Rollback reports one restore of a last good release.
type Rollback struct {
	// From is the failed release; To the restored one ("" when none could be).
	From string `json:"from"`
	To   string `json:"to,omitempty"`
	// Took is how long the restore took, from the decision to the restored
	// machines answering their health check.
	Took time.Duration `json:"took"`
	// Machines are the machines that serve after the restore.
	Machines []string `json:"machines,omitempty"`
	// Error says why the restore did not complete; empty when it did.
	Error string `json:"error,omitempty"`
}

// Publish moves app to a new release and judges it. The previous release
// keeps serving while the new one is judged (blue-green: the router routes
// only to the old machines until the verdict is live). A failed verdict
// restores the last known good release — nothing of it is deleted or pruned —
// and an unknown verdict changes nothing that serves.
//
// ctx ending (the operator's first Ctrl-C or SIGTERM) interrupts the publish
// safely: blue-green drops the new machines (the serving ones never
// stopped); in place restores the last good release. Either way the release
// is recorded as interrupted and the error wraps ErrInterrupted. Closing
// req.Abort (a second signal) cuts even that short: the error then wraps
// ErrAborted and says what state was left and the command that repairs it.
//
// The returned error is nil whenever a verdict was reached (read
// Result.Verdict.Status); it is ErrInvalid for bad input (nothing changed;
// platform.ErrImageNotFound among them), ErrBusy when the app is locked,
// and wrapped platform or store errors when the publish could not proceed.
func (g *Gate) Publish(ctx context.Context, req Request) (Result, error) {
	req, err := g.normalize(req)
	if err != nil {
		return Result{}, err
	}
	if err := g.checkImage(ctx, req.Config.Image); err != nil {
		return Result{}, err
	}
	fl, err := g.lock(req.App)
	if err != nil {
		return Result{}, err
	}
	defer fl.Unlock()
	defer g.releaseLeases(ctx, req.App)
	// fctx is for finishing safely after an interruption: it outlives ctx
	// and ends only on Abort.
	fctx, stopF := abortable(ctx, req.Abort)
	defer stopF()

	t0 := g.clock.Now()
	app := req.App
	current, hasCurrent, err := g.store.Current(ctx, app)
	if err != nil {
		return Result{}, err
	}
	lastGood, hasGood, err := g.store.LastGood(ctx, app, "")
	if err != nil {
		return Result{}, err
	}
	cctx, cancel := g.callCtx(ctx)
	machines, err := g.p.List(cctx, app)
	cancel()
	if err != nil {
		return Result{}, fmt.Errorf("list machines of %s: %w", app, err)
	}

	rel := Release{App: app, Config: req.Config, Platform: g.p.Name(), Strategy: req.Strategy, Health: req.Health,
		Status: ReleasePending, CreatedAt: t0, Since: map[string]time.Time{}}
	if hasGood {
		rel.LastGood = lastGood.ID
	}
	rel, err = g.store.Create(ctx, rel)
	if err != nil {
		return Result{}, err
	}
	cfg := req.Config.WithMetadata(platform.MetadataRelease, rel.ID)
	rel.Config = cfg
	g.step(app, rel.ID, t0, "publishing %s of %s (image %s) on %s, %s", rel.ID, app, cfg.Image, g.p.Name(), req.Strategy)
	before := map[string]Prior{}
	interrupted := func() (Result, error) {
		return g.interrupt(fctx, ctx, rel, lastGood, hasGood, req, t0)
	}

	var old []platform.Machine
	switch req.Strategy {
	case StrategyBlueGreen:
		old = servingMachines(machines, current, hasCurrent)
		if err := g.ensureServing(ctx, app, rel.ID, t0, old, req.Health); err != nil {
			if ctx.Err() != nil {
				return interrupted()
			}
			return g.abort(ctx, rel, t0, fmt.Errorf("the serving release could not be made to serve: %w", err))
		}
		n := len(old)
		if n == 0 {
			n = req.Machines
		}
		create := g.p.Create
		if uc, ok := g.p.(platform.UnroutedCreator); ok {
			// The platform's own proxy would route to a new machine at
			// once: create it unrouted; the switch registers it.
			create = uc.CreateUnrouted
		}
		for i := 0; i < n; i++ {
			cctx, cancel := g.callCtx(ctx)
			m, err := create(cctx, app, cfg)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return interrupted()
				}
				g.discard(fctx, app, rel.Machines)
				if errors.Is(err, platform.ErrImageNotFound) && len(rel.Machines) == 0 {
					return g.abort(ctx, rel, t0, fmt.Errorf("%w: %w", ErrInvalid, err))
				}
				return g.abort(ctx, rel, t0, fmt.Errorf("create machine %d of %d: %w", i+1, n, err))
			}
			rel.Machines = append(rel.Machines, m.ID)
			noteSince(rel.Since, m)
			g.step(app, rel.ID, t0, "created machine %s for %s beside %d serving", m.ID, rel.ID, len(old))
		}
	case StrategyInPlace:
		targets := activeMachines(machines)
		if len(targets) == 0 {
			for i := 0; i < req.Machines; i++ {
				cctx, cancel := g.callCtx(ctx)
				m, err := g.p.Create(cctx, app, cfg)
				cancel()
				if err != nil {
					if ctx.Err() != nil {
						return interrupted()
					}
					if errors.Is(err, platform.ErrImageNotFound) && len(rel.Machines) == 0 {
						return g.abort(ctx, rel, t0, fmt.Errorf("%w: %w", ErrInvalid, err))
					}
					return g.abort(ctx, rel, t0, fmt.Errorf("create machine %d of %d: %w", i+1, req.Machines, err))
				}
				rel.Machines = append(rel.Machines, m.ID)
				noteSince(rel.Since, m)
				g.step(app, rel.ID, t0, "created machine %s for %s", m.ID, rel.ID)
			}
		}
		for _, m := range targets {
			before[m.ID] = Prior{Release: m.Release(), Image: m.Config.Image}
			rel.Machines = append(rel.Machines, m.ID)
			if m.State == platform.StateStopped || m.State == platform.StateSuspended {
				rel.Sleeping = append(rel.Sleeping, m.ID)
			}
			um, err := g.update(ctx, app, m.ID, cfg)
			switch {
			case err == nil:
				noteSince(rel.Since, um)
				g.step(app, rel.ID, t0, "updated machine %s to %s", m.ID, rel.ID)
			case ctx.Err() != nil:
				if err := g.store.Save(context.WithoutCancel(ctx), rel); err != nil {
					return Result{}, err
				}
				return interrupted()
			case platform.IsControlPlane(err) || errors.Is(err, platform.ErrConflict):
				// The platform did not answer, refused for now, or someone
				// else holds the machine: the update may or may not happen.
				// An API error alone never fails a release: judge what the
				// machine runs — still the old release is "not yet".
				g.step(app, rel.ID, t0, "machine %s: the platform did not take the update to %s (%v); judging what it runs", m.ID, rel.ID, err)
			case errors.Is(err, platform.ErrImageNotFound) && len(rel.Machines) == 1:
				// Refused before anything changed: bad input.
				return g.abort(ctx, rel, t0, fmt.Errorf("%w: %w", ErrInvalid, err))
			default:
				// The platform refused the update; some machines may run the
				// release already: judge nothing, restore the last good
				// release on all of them.
				return g.fail(fctx, rel, lastGood, hasGood, req, t0, Verdict{Status: StatusFailed,
					Reasons: []string{fmt.Sprintf("machine %s: update to %s failed: %v", m.ID, rel.ID, err)}})
			}
		}
	}
	if err := g.store.Save(ctx, rel); err != nil {
		return Result{}, err
	}

	v, looks, err := g.lookLoop(ctx, judgement{
		app: app, release: rel.ID, image: cfg.Image, machines: rel.Judged(), t0: t0, deadline: t0.Add(g.opts.Window),
		health: req.Health, appProbe: req.Strategy == StrategyInPlace, serving: req.Strategy == StrategyInPlace,
		policy: g.opts.policy(), since: rel.Since, before: before,
	})
	rel.Since = sinceFromLooks(rel.Since, looks, rel.ID)
	if err != nil {
		rel.Verdict = &v
		return interrupted()
	}
	if len(looks) > 0 {
		l := looks[len(looks)-1]
		rel.LastLook = &l
	}

	switch v.Status {
	case StatusLive:
		return g.goLive(ctx, rel, v, old, req, t0)
	case StatusFailed:
		return g.fail(fctx, rel, lastGood, hasGood, req, t0, v)
	default:
		rel.Verdict = &v
		rel.Reason = strings.Join(v.Reasons, "; ")
		rel.UpdatedAt = g.clock.Now()
		if err := g.store.Save(ctx, rel); err != nil {
			return Result{}, err
		}
		g.step(app, rel.ID, t0, "verdict unknown: nothing rolled back; %s stays pending for `mythex publish reconcile`", rel.ID)
		return Result{Release: rel, Verdict: v, Elapsed: g.clock.Since(t0)}, nil
	}
}

// checkImage asks the platform, when it can tell, whether the image exists —
// before anything changes. A missing image is bad input (ErrInvalid).
func (g *Gate) checkImage(ctx context.Context, image string) error {
	ic, ok := g.p.(platform.ImageChecker)
	if !ok {
		return nil
	}
	cctx, cancel := g.callCtx(ctx)
	defer cancel()
	err := ic.CheckImage(cctx, image)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, platform.ErrImageNotFound):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	default:
		return fmt.Errorf("check image %s: %w", image, err)
	}
}

// update sends one in-place update. A refusal that says "not now" (429) is
// retried after a pause, up to updateAttempts times in all: nothing happened
// on the platform, so sending it again is safe. A timeout is not retried:
// the update may be under way.
func (g *Gate) update(ctx context.Context, app, id string, cfg platform.Config) (platform.Machine, error) {
	if err := g.hold(ctx, app, id); err != nil {
		return platform.Machine{}, err
	}
	wait := g.opts.PollInterval
	for attempt := 1; ; attempt++ {
		cctx, cancel := g.callCtx(ctx)
		m, err := g.p.Update(cctx, app, id, cfg)
		cancel()
		if err == nil || !errors.Is(err, platform.ErrRateLimited) || attempt >= updateAttempts {
			return m, err
		}
		if err := g.sleep(ctx, wait); err != nil {
			return m, err
		}
		wait *= 2
	}
}

// updateAttempts bounds the tries of one rate-limited update.
const updateAttempts = 4

// noteSince records m's newest launch or update event — the publish's own
// write, on the platform's clock — as its t0.
func noteSince(since map[string]time.Time, m platform.Machine) {
	var writes []platform.Event
	for _, e := range m.Events {
		if e.Type == platform.EventLaunch || e.Type == platform.EventUpdate {
			writes = append(writes, e)
		}
	}
	if e, ok := latest(writes); ok && m.ID != "" {
		since[m.ID] = e.Timestamp
	}
}

// sinceFromLooks completes since with the t0 the looks show for machines
// whose write did not answer (the first look on release rel).
func sinceFromLooks(since map[string]time.Time, looks []Look, rel string) map[string]time.Time {
	if since == nil {
		since = map[string]time.Time{}
	}
	for _, l := range looks {
		for _, ml := range l.Machines {
			if _, ok := since[ml.ID]; ok || ml.ErrKind != ErrKindNone || ml.Machine.Release() != rel {
				continue
			}
			m := ml.Machine
			m.ID = ml.ID
			noteSince(since, m)
		}
	}
	return since
}

// goLive applies a live verdict: blue-green switches the router to the new
// machines and stops (keeps) the old ones.
func (g *Gate) goLive(ctx context.Context, rel Release, v Verdict, old []platform.Machine, req Request, t0 time.Time) (Result, error) {
	app := rel.App
	if req.Strategy == StrategyBlueGreen {
		news, err := g.getAll(ctx, app, rel.Machines)
		if err == nil {
			err = g.switchTo(ctx, app, rel.ID, t0, news, old)
		}
		if err != nil {
			// The new machines passed, but traffic could not be moved to them:
			// the old ones still serve; give the new ones up.
			v.Status = StatusFailed
			v.Reasons = append(v.Reasons, fmt.Sprintf("switching traffic to %s failed: %v", rel.ID, err))
			return g.fail(context.WithoutCancel(ctx), rel, Release{}, false, req, t0, v)
		}
		g.prune(ctx, app, rel.ID, old)
	}
	now := g.clock.Now()
	rel.Status, rel.LiveAt, rel.UpdatedAt, rel.Verdict = ReleaseLive, now, now, &v
	if err := g.store.Save(ctx, rel); err != nil {
		return Result{}, err
	}
	if err := g.store.SetCurrent(ctx, app, rel.ID); err != nil {
		return Result{}, err
	}
	g.step(app, rel.ID, t0, "%s is live", rel.ID)
	return Result{Release: rel, Verdict: v, Elapsed: g.clock.Since(t0)}, nil
}

// fail applies a failed verdict: restore the last good release (unless the
// request says not to) and record why.
func (g *Gate) fail(ctx context.Context, rel Release, lastGood Release, hasGood bool, req Request, t0 time.Time, v Verdict) (Result, error) {
	app := rel.App
	rel.Verdict = &v
	rel.Reason = strings.Join(v.Reasons, "; ")
	res := Result{Verdict: v}
	switch {
	case req.NoRollback:
		rel.Status = ReleaseFailed
		rel.Reason += "; not rolled back (--no-rollback)"
		g.step(app, rel.ID, t0, "%s failed; not rolling back (asked not to)", rel.ID)
	case req.Strategy == StrategyBlueGreen:
		// The serving machines were never touched: drop the new ones.
		start := g.clock.Now()
		g.discard(ctx, app, rel.Machines)
		rb := &Rollback{From: rel.ID, Took: g.clock.Since(start)}
		if hasGood {
			rb.To = lastGood.ID
			rb.Machines = g.machinesOf(ctx, app, lastGood.ID)
			rel.Status, rel.RolledBackTo = ReleaseRolledBack, lastGood.ID
			if cur, ok, _ := g.store.Current(ctx, app); ok && cur.ID != lastGood.ID {
				// The release serving is not the last good one: restore it.
				rb = g.restore(ctx, rel, lastGood, t0)
				rel.Status = statusAfter(rb)
			}
		} else {
			rel.Status = ReleaseFailed
			rel.Reason += "; no known good release to roll back to (the machines serving before, if any, were left serving)"
		}
		res.Rollback = rb
		g.step(app, rel.ID, t0, "%s failed; its machines were removed, the serving machines never stopped serving", rel.ID)
	case hasGood:
		rb := g.restore(ctx, rel, lastGood, t0)
		res.Rollback = rb
		rel.Status = statusAfter(rb)
		rel.RolledBackTo = rb.To
		if rb.Error != "" {
			rel.Reason += "; rollback to " + lastGood.ID + " did not complete: " + rb.Error
		}
	default:
		rel.Status = ReleaseFailed
		rel.Reason += "; no known good release to roll back to"
		g.step(app, rel.ID, t0, "%s failed and there is no known good release to restore", rel.ID)
	}
	rel.UpdatedAt = g.clock.Now()
	if err := g.store.Save(context.WithoutCancel(ctx), rel); err != nil {
		return Result{}, err
	}
	if rel.Status == ReleaseRolledBack {
		if err := g.store.SetCurrent(context.WithoutCancel(ctx), app, rel.RolledBackTo); err != nil {
			return Result{}, err
		}
	}
	res.Release, res.Elapsed = rel, g.clock.Since(t0)
	return res, nil
}

func statusAfter(rb *Rollback) ReleaseStatus {
	if rb.Error != "" || rb.To == "" {
		return ReleaseFailed
	}
	return ReleaseRolledBack
}

// abort records a publish that could not start judging, after undoing what
// it created.
func (g *Gate) abort(ctx context.Context, rel Release, t0 time.Time, cause error) (Result, error) {
	rel.Status = ReleaseFailed
	rel.Reason = cause.Error()
	rel.UpdatedAt = g.clock.Now()
	_ = g.store.Save(context.WithoutCancel(ctx), rel)
	g.step(rel.App, rel.ID, t0, "%s aborted: %v", rel.ID, cause)
	return Result{Release: rel, Elapsed: g.clock.Since(t0)}, fmt.Errorf("publish %s/%s: %w", rel.App, rel.ID, cause)
}

// servingMachines picks the machines that serve app now: those of the
// current release when one is recorded, else every started machine (adopted
// from outside mythex).
func servingMachines(ms []platform.Machine, current Release, hasCurrent bool) []platform.Machine {
	var out []platform.Machine
	for _, m := range ms {
		if m.State == platform.StateDestroyed || m.State == platform.StateDestroying {
			continue
		}
		if hasCurrent && m.Release() == current.ID {
			out = append(out, m)
		} else if !hasCurrent && m.State == platform.StateStarted {
			out = append(out, m)
		}
	}
	return out
}

// machinesOf lists the started machines of app that run release rel.
func (g *Gate) machinesOf(ctx context.Context, app, rel string) []string {
	cctx, cancel := g.callCtx(ctx)
	defer cancel()
	ms, err := g.p.List(cctx, app)
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range ms {
		if m.Release() == rel && m.State == platform.StateStarted {
			out = append(out, m.ID)
		}
	}
	return out
}

func activeMachines(ms []platform.Machine) []platform.Machine {
	var out []platform.Machine
	for _, m := range ms {
		if m.State != platform.StateDestroyed && m.State != platform.StateDestroying {
			out = append(out, m)
		}
	}
	return out
}

func (g *Gate) getAll(ctx context.Context, app string, ids []string) ([]platform.Machine, error) {
	var out []platform.Machine
	for _, id := range ids {
		cctx, cancel := g.callCtx(ctx)
		m, err := g.p.Get(cctx, app, id)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("get machine %s: %w", id, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// discard stops and destroys machines of a failed release (never a serving
// or good release's), after deregistering them. ctx should outlive an
// interruption (see restore).
func (g *Gate) discard(ctx context.Context, app string, ids []string) {
	for _, id := range ids {
		if g.router != nil {
			_ = g.router.Deregister(ctx, lbport.TargetRef{ID: id})
		}
		cctx, cancel := g.callCtx(ctx)
		if err := g.p.Destroy(cctx, app, id); err != nil && !errors.Is(err, platform.ErrNotFound) {
			g.log.Warn("destroy machine of a failed release", "app", app, "machine", id, "err", err)
		}
		cancel()
	}
}

package publish

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/platform"
)

// judgement is one run of the look loop: what to look at and how.
type judgement struct {
	app      string
	release  string
	image    string
	machines []string
	t0       time.Time
	deadline time.Time
	health   Health
	// appProbe: the app's own URL is served by the machines being judged (in
	// place), so its health check is evidence about them.
	appProbe bool
	// serving: list the app's machines at every look and fail on mixed
	// versions (in place: every started machine must run the release).
	serving bool
	policy  Policy
	// prior are looks carried over from an earlier run (the reconciler's
	// baseline).
	prior []Look
	// since: per machine, the publish's write on the platform's clock.
	since map[string]time.Time
	// before: per machine updated in place, what it ran before.
	before map[string]Prior
}

// lookLoop looks at the machines until Judge gives a verdict other than
// pending: the next look comes after the delay the verdict asks for, the last
// one at the deadline. Only ctx ends it early (with ctx's error).
func (g *Gate) lookLoop(ctx context.Context, j judgement) (Verdict, []Look, error) {
	looks := append([]Look(nil), j.prior...)
	n := 0
	if len(looks) > 0 {
		n = looks[len(looks)-1].N
	}
	addrs := map[string]string{}
	for {
		n++
		look, serving := g.look(ctx, j, n, addrs)
		looks = append(looks, look)
		now := g.clock.Now()
		v := Judge(Input{Start: j.t0, Now: now, Deadline: j.deadline, Image: j.image, Release: j.release,
			Machines: j.machines, Looks: looks, Policy: j.policy, Serving: serving, Since: j.since, Before: j.before})
		if g.observer != nil {
			l, vv := look, v
			g.observer(Event{Kind: EventLook, At: now, App: j.app, Release: j.release, Look: &l, Verdict: &vv, Elapsed: now.Sub(j.t0)})
		}
		if v.Status != StatusPending {
			return v, looks, nil
		}
		wait := v.NextLook
		if rem := j.deadline.Sub(now); rem < wait {
			wait = rem
		}
		if err := g.sleep(ctx, wait); err != nil {
			return v, looks, err
		}
	}
}

// look takes one look at every machine: the platform's view, and a direct
// health check of each started machine (or of any machine the platform did
// not answer about, at its last known address).
func (g *Gate) look(ctx context.Context, j judgement, n int, addrs map[string]string) (Look, []platform.Machine) {
	l := Look{N: n, At: g.clock.Now()}
	for _, id := range j.machines {
		ml := MachineLook{ID: id}
		cctx, cancel := g.callCtx(ctx)
		m, err := g.p.Get(cctx, j.app, id)
		cancel()
		probe := false
		if err != nil {
			ml.ErrKind, ml.Err = classify(err), err.Error()
			probe = true
		} else {
			ml.Machine = m
			if m.Address != "" {
				addrs[id] = m.Address
			}
			probe = m.State == platform.StateStarted
		}
		if probe && j.health.Path != "" && addrs[id] != "" {
			ml.Health = g.checker.Check(ctx, "http://"+addrs[id]+j.health.Path)
		} else if err == nil && m.State == platform.StateStarted && len(m.Checks) > 0 && !j.appProbe {
			// No address of its own (Fly): the platform's own checks of the
			// machine are its health.
			ml.Health = checksHealth(m)
		}
		l.Machines = append(l.Machines, ml)
	}
	if j.appProbe && j.health.AppURL != "" {
		l.App = g.checker.Check(ctx, j.health.AppURL)
	}
	if !j.serving {
		return l, nil
	}
	cctx, cancel := g.callCtx(ctx)
	defer cancel()
	ms, err := g.p.List(cctx, j.app)
	if err != nil {
		return l, nil
	}
	if ms == nil {
		ms = []platform.Machine{}
	}
	return l, ms
}

// classify maps a platform error to the judge's error kinds.
func classify(err error) ErrKind {
	switch {
	case errors.Is(err, platform.ErrNotFound):
		return ErrKindNotFound
	case platform.IsControlPlane(err):
		return ErrKindControlPlane
	default:
		return ErrKindOther
	}
}

// checksHealth turns the platform's own checks of m into a probe: OK when
// every check passes.
func checksHealth(m platform.Machine) HealthResult {
	p := HealthResult{Ran: true, OK: true, Target: "the platform's checks of machine " + m.ID}
	for _, c := range m.Checks {
		if c.Status != "passing" {
			p.OK = false
			p.Error = fmt.Sprintf("check %s %s", c.Name, c.Status)
			if c.Output != "" {
				p.Error += ": " + c.Output
			}
			break
		}
	}
	return p
}

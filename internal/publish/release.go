package publish

import (
	"time"

	"github.com/mythex/mythex/internal/platform"
)

// ReleaseStatus is where a release stands.
type ReleaseStatus string

// Release statuses.
const (
	// ReleasePending: being published, or judged unknown and waiting for the
	// reconciler to decide.
	ReleasePending ReleaseStatus = "pending"
	// ReleaseLive: judged live; a known good release (the newest one is the
	// rollback target of the next failure).
	ReleaseLive ReleaseStatus = "live"
	// ReleaseFailed: judged failed and nothing could be restored (no known
	// good release, or the restore itself failed).
	ReleaseFailed ReleaseStatus = "failed"
	// ReleaseRolledBack: judged failed — at publish or later by the reconciler
	// — and the last known good release was restored in its place.
	ReleaseRolledBack ReleaseStatus = "rolled_back"
	// ReleaseInterrupted: the operator interrupted the publish before a
	// verdict and what it changed was undone (blue-green: its machines
	// removed; in place: the last good release restored, or, with none, its
	// machines left running). Never a rollback target.
	ReleaseInterrupted ReleaseStatus = "interrupted"
)

// Strategy is how a publish moves an app's machines to a new release.
type Strategy string

// Strategies.
const (
	// StrategyBlueGreen creates new machines for the release beside the
	// serving ones; the router keeps sending traffic to the old machines
	// until the verdict is live, then switches. A failure never touches the
	// serving machines. Needs a Router.
	StrategyBlueGreen Strategy = "bluegreen"
	// StrategyInPlace updates the app's machines to the release (Fly's
	// rolling/immediate strategies) and restores the last good config on a
	// failure. Used when there is no router (Fly's proxy routes by itself).
	StrategyInPlace Strategy = "inplace"
)

// Release is one version of an app as published through mythex.
type Release struct {
	// App is the app's name.
	App string `json:"app"`
	// ID is "v<Seq>", unique within the app.
	ID string `json:"id"`
	// Seq numbers the app's releases from 1.
	Seq int `json:"seq"`
	// Config is what the release's machines run (image, env, restart policy);
	// kept forever so the release can always be restored.
	Config platform.Config `json:"config"`
	// Platform is the platform's name ("local", "fly", "docker").
	Platform string `json:"platform"`
	// Strategy is how it was published.
	Strategy Strategy `json:"strategy"`
	// Health is how the app's health is checked.
	Health Health `json:"health"`
	// Status is where it stands.
	Status ReleaseStatus `json:"status"`
	// CreatedAt is when the publish began (t0); UpdatedAt when the record last
	// changed; LiveAt when it was judged live (zero if never).
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	LiveAt    time.Time `json:"live_at,omitzero"`
	// LastGood is the id of the last known good release when this one was
	// published: the rollback target.
	LastGood string `json:"last_good,omitempty"`
	// RolledBackTo is the release restored when this one failed.
	RolledBackTo string `json:"rolled_back_to,omitempty"`
	// Reason says why it failed or was rolled back, or why the verdict was
	// unknown.
	Reason string `json:"reason,omitempty"`
	// Verdict is the gate's (or the reconciler's) last verdict.
	Verdict *Verdict `json:"verdict,omitempty"`
	// Machines are the ids of the machines that run (or ran) it.
	Machines []string `json:"machines,omitempty"`
	// Sleeping are those of Machines that were stopped or suspended when an
	// in-place publish began (Fly autostop): updated too, so they wake on
	// the release, but never judged — a stopped machine stays stopped when
	// updated.
	Sleeping []string `json:"sleeping,omitempty"`
	// Interrupted is set when the operator interrupted the publish; with
	// Status pending it means the undoing was itself cut off (a second
	// signal): the reconciler finishes the undoing rather than judging it.
	Interrupted bool `json:"interrupted,omitempty"`
	// Since gives, per machine, when the publish's write (create or update)
	// happened on the platform's clock: crashes before it belong to an
	// earlier release. Compared only with the platform's own timestamps.
	Since map[string]time.Time `json:"since,omitempty"`
	// LastLook is the reconciler's latest look, the baseline its next round
	// compares with; CheckedAt is when it was taken.
	LastLook  *Look     `json:"last_look,omitempty"`
	CheckedAt time.Time `json:"checked_at,omitzero"`
}

// Health says how a release's health is checked.
type Health struct {
	// Path is the health endpoint's path on each machine's address, e.g.
	// "/healthz".
	Path string `json:"path,omitempty"`
	// AppURL is the app's own endpoint (public URL or load balancer) checked
	// when a machine has no address of its own, e.g.
	// "https://api.fly.dev/healthz".
	AppURL string `json:"app_url,omitempty"`
}

// Judged returns the machines whose looks decide the release: Machines
// without Sleeping (all of them when every one was asleep).
func (r Release) Judged() []string {
	if len(r.Sleeping) == 0 {
		return r.Machines
	}
	asleep := map[string]bool{}
	for _, id := range r.Sleeping {
		asleep[id] = true
	}
	var out []string
	for _, id := range r.Machines {
		if !asleep[id] {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return r.Machines
	}
	return out
}

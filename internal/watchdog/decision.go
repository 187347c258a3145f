package watchdog

import (
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

// Kind is what the watchdog decided about one service in one round.
type Kind uint8

// Decision kinds. Only KindHeal acts; every other kind leaves the service
// alone.
const (
	// KindSkipLocked: the host lock is held (a deploy, the bootstrap, a lease
	// recovery): the service was not looked at, no strike counted, and the
	// strikes so far were dropped.
	KindSkipLocked Kind = iota + 1
	// KindSkipMaintenance: maintenance mode pauses healing; the service was
	// looked at for status, but nothing is counted.
	KindSkipMaintenance
	// KindOK: an instance of the definition's spec runs and is healthy (or
	// has no health check). Strikes reset.
	KindOK
	// KindWait: neither failed nor healthy — still inside its health check's
	// start period, or the platform itself is restarting it (Docker's
	// restart policy). Strikes are kept, not added to.
	KindWait
	// KindStrike: a failed check (not running, exited, unhealthy), strike n
	// of K with n < K.
	KindStrike
	// KindDrift: an instance of another spec runs under the service's name
	// (another version, command, environment…); a strike like KindStrike.
	KindDrift
	// KindHeal: the K-th consecutive strike: start the service from the
	// definition (stopping the unhealthy or drifted instance first).
	KindHeal
	// KindBackoff: K strikes, but the service is crash-looping and its
	// backoff has not run out; no heal this round.
	KindBackoff
)

var kindNames = [...]string{
	KindSkipLocked:      "skip-locked",
	KindSkipMaintenance: "skip-maintenance",
	KindOK:              "ok",
	KindWait:            "wait",
	KindStrike:          "strike",
	KindDrift:           "drift",
	KindHeal:            "heal",
	KindBackoff:         "backoff",
}

// String returns the kind's name as it appears in logs and in the
// decision label of mythex_watchdog_decisions_total.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Cause is why a decision was taken: a short fixed word, used as the reason
// label of the watchdog's Prometheus counters (so it has few values), with
// the details for a person in Decision.Detail.
type Cause string

// Causes.
const (
	// CauseLockHeld: someone else holds the host lock.
	CauseLockHeld Cause = "lock-held"
	// CauseMaintenance: maintenance mode is on.
	CauseMaintenance Cause = "maintenance"
	// CauseHealthy: the definition's spec runs, healthy or without a health
	// check.
	CauseHealthy Cause = "healthy"
	// CauseStarting: the definition's spec runs, and no health check has
	// passed yet while too few have failed (Docker's "starting").
	CauseStarting Cause = "starting"
	// CausePlatformRestarting: the runtime's platform is restarting the
	// instance itself (Docker's restart policy; runtime state "restarting").
	CausePlatformRestarting Cause = "platform-restarting"
	// CauseNotRunning: the runtime has no instance of the definition's spec.
	CauseNotRunning Cause = "not-running"
	// CauseExited: the definition's spec ended on its own (a crash, a kill,
	// an exit nobody asked for).
	CauseExited Cause = "exited"
	// CauseStopped: the definition's spec was stopped on request and not
	// started again.
	CauseStopped Cause = "stopped"
	// CauseUnhealthy: the definition's spec runs and its health check says
	// unhealthy.
	CauseUnhealthy Cause = "unhealthy"
	// CauseDriftVersion: another version of the service runs.
	CauseDriftVersion Cause = "drift-version"
	// CauseDriftSpec: the same version runs with another spec (command,
	// environment, image, health check or other settings differ).
	CauseDriftSpec Cause = "drift-spec"
)

// Drift reports whether c is a drift cause.
func (c Cause) Drift() bool { return c == CauseDriftVersion || c == CauseDriftSpec }

// ServiceState is the watchdog's summary of one service, as status shows it.
type ServiceState string

// Service states.
const (
	// StateUnknown: not looked at yet.
	StateUnknown ServiceState = "unknown"
	// StateOK: runs the definition's spec and is healthy.
	StateOK ServiceState = "ok"
	// StateStarting: inside its start period; not judged yet.
	StateStarting ServiceState = "starting"
	// StateRestarting: the platform is restarting it.
	StateRestarting ServiceState = "restarting"
	// StateFailing: failed its latest check(s).
	StateFailing ServiceState = "failing"
	// StateDrifted: another spec runs under its name.
	StateDrifted ServiceState = "drifted"
	// StateHealing: the watchdog has just (re)started it.
	StateHealing ServiceState = "healing"
	// StateCrashLooping: healed CrashLoopAfter or more times in a row without
	// staying up; further heals back off.
	StateCrashLooping ServiceState = "crash-looping"
)

// Record is what the watchdog remembers about one service between rounds.
// Decide returns the next record; the zero Record is a service never seen.
type Record struct {
	// Name is the service name.
	Name string
	// SpecHash is the definition's spec the record is about. When the
	// definition changes the service's spec (a deploy), the record starts
	// over.
	SpecHash string
	// State is the summary for status.
	State ServiceState
	// Reason says why, for a person ("" when ok).
	Reason string
	// Since is when State last changed.
	Since time.Time
	// Strikes is the consecutive failed rounds so far, 0..K.
	Strikes int
	// OKStreak is the consecutive healthy rounds so far.
	OKStreak int
	// HealsInRow is the heals since the service last stayed up for K rounds;
	// from Policy.CrashLoopAfter on it is crash-looping.
	HealsInRow int
	// Heals is how many times the watchdog healed this spec.
	Heals int
	// LastHeal is when it was last healed; zero if never.
	LastHeal time.Time
	// NextHeal is the earliest time of the next heal (backoff); zero or past
	// when nothing holds it back.
	NextHeal time.Time
	// LastHealError is why the last heal failed; "" when it worked.
	LastHealError string
}

// HealFailed returns rec after a heal that Decide ordered failed with err:
// the reason says so. The heal still counts toward the backoff.
func (rec Record) HealFailed(err error) Record {
	rec.LastHealError = err.Error()
	rec.Reason = "heal failed: " + err.Error()
	return rec
}

// Decision is what the watchdog decided about one service in one round.
type Decision struct {
	// Kind is the decision.
	Kind Kind
	// Cause is why, as a short fixed word (the metrics' reason label).
	Cause Cause
	// Detail says why for a person: which instance, which version, which
	// exit code or health check.
	Detail string
	// Strike is the consecutive failed rounds counting this one (strike,
	// drift, heal, backoff); the strikes kept for wait.
	Strike int
	// Of is K, the strikes that make a heal.
	Of int
	// StopFirst, for a heal, says that an instance runs (unhealthy, or of
	// another spec) and must be stopped, within its stop grace period,
	// before the definition's spec is started.
	StopFirst bool
	// NextHeal, for a heal or a backoff, is the earliest time of the next
	// heal of this service.
	NextHeal time.Time
}

// Observation is what one round saw, for one service.
type Observation struct {
	// Now is the round's time.
	Now time.Time
	// Service is the service as the current published definition has it.
	Service definition.Service
	// Instances is the runtime's status (every instance; Decide looks at the
	// ones named Service.Name). Ignored when the lock is held.
	Instances []runtime.ServiceStatus
	// LockHeldBy names who holds the host lock (e.g. "deploy: v3 by ci",
	// "bootstrap") when the watchdog could not take it; "" when the watchdog
	// holds it for this round.
	LockHeldBy string
	// Maintenance is the maintenance window, if one was set; it applies while
	// Now is before its Until.
	Maintenance *Maintenance
}

// Decide is the watchdog's rule for one service in one round: a pure
// function of the service's previous record, this round's observation and
// the policy. In order:
//
//  1. a new spec in the definition (a deploy) starts a new record;
//  2. maintenance on: skip-maintenance — look, count nothing, drop strikes;
//  3. host lock held by someone else: skip-locked — do not look, drop
//     strikes (a deploy interrupts the run of consecutive failures);
//  4. healthy: ok, strikes reset; K healthy rounds in a row end a crash loop;
//  5. starting, or being restarted by the platform: wait, strikes kept;
//  6. not running, exited, stopped, unhealthy or drifted: a strike; the K-th
//     heals, unless the service is crash-looping and its backoff
//     (Policy.Backoff) has not run out.
func Decide(rec Record, obs Observation, p Policy) (Record, Decision) {
	spec := obs.Service.SpecHash()
	if rec.Name != obs.Service.Name || rec.SpecHash != spec {
		rec = Record{Name: obs.Service.Name, SpecHash: spec, State: StateUnknown, Since: obs.Now}
	}
	k := p.FailuresBeforeHeal
	now := obs.Now
	crashLooping := rec.HealsInRow >= p.CrashLoopAfter

	if m := obs.Maintenance; m.Active(now) {
		a := assess(obs.Service, spec, obs.Instances)
		rec.Strikes, rec.OKStreak = 0, 0
		state := stateFor(a.cause, crashLooping)
		reason := fmt.Sprintf("healing paused by maintenance until %s", m.Until.Format(time.RFC3339))
		if a.cause != CauseHealthy {
			reason += ": " + a.detail
		}
		rec = rec.with(state, reason, now)
		return rec, Decision{Kind: KindSkipMaintenance, Cause: CauseMaintenance, Detail: reason, Of: k}
	}
	if obs.LockHeldBy != "" {
		rec.Strikes, rec.OKStreak = 0, 0
		reason := "not checked: the host lock is held by " + obs.LockHeldBy
		rec = rec.with(rec.State, reason, now)
		return rec, Decision{Kind: KindSkipLocked, Cause: CauseLockHeld, Detail: reason, Of: k}
	}

	a := assess(obs.Service, spec, obs.Instances)
	d := Decision{Cause: a.cause, Detail: a.detail, Of: k}
	switch a.cause {
	case CauseHealthy:
		rec.Strikes = 0
		rec.OKStreak++
		if rec.OKStreak >= k {
			rec.HealsInRow, rec.NextHeal = 0, time.Time{}
		}
		rec.LastHealError = ""
		rec = rec.with(StateOK, "", now)
		d.Kind = KindOK
		return rec, d
	case CauseStarting, CausePlatformRestarting:
		rec.OKStreak = 0
		rec = rec.with(stateFor(a.cause, crashLooping), a.detail, now)
		d.Kind, d.Strike = KindWait, rec.Strikes
		return rec, d
	}

	// A failed check.
	rec.OKStreak = 0
	rec.Strikes = min(rec.Strikes+1, k)
	d.Strike = rec.Strikes
	switch {
	case rec.Strikes < k:
		d.Kind = KindStrike
		if a.cause.Drift() {
			d.Kind = KindDrift
		}
		reason := fmt.Sprintf("strike %d of %d: %s", rec.Strikes, k, a.detail)
		rec = rec.with(stateFor(a.cause, crashLooping), reason, now)
	case rec.HealsInRow > 0 && now.Before(rec.NextHeal):
		d.Kind, d.NextHeal = KindBackoff, rec.NextHeal
		reason := fmt.Sprintf("crash-looping: healed %d times in a row without staying up; next heal not before %s: %s",
			rec.HealsInRow, rec.NextHeal.Format(time.RFC3339), a.detail)
		rec = rec.with(StateCrashLooping, reason, now)
	default:
		rec.HealsInRow++
		rec.Heals++
		rec.LastHeal = now
		rec.NextHeal = now.Add(p.Backoff(rec.HealsInRow))
		rec.Strikes = 0
		rec.LastHealError = ""
		d.Kind, d.StopFirst, d.NextHeal = KindHeal, a.stopFirst, rec.NextHeal
		state, what := StateHealing, "healing"
		if rec.HealsInRow >= p.CrashLoopAfter {
			state, what = StateCrashLooping, fmt.Sprintf("crash-looping (heal %d in a row)", rec.HealsInRow)
		}
		rec = rec.with(state, fmt.Sprintf("%s after %d failed checks: %s", what, k, a.detail), now)
	}
	return rec, d
}

// with sets state and reason, moving Since when the state changes.
func (rec Record) with(state ServiceState, reason string, now time.Time) Record {
	if state != rec.State {
		rec.Since = now
	}
	rec.State, rec.Reason = state, reason
	return rec
}

// stateFor is the status state of a service whose latest look found cause.
func stateFor(c Cause, crashLooping bool) ServiceState {
	switch {
	case c == CauseHealthy:
		return StateOK
	case c == CauseStarting:
		return StateStarting
	case c == CausePlatformRestarting:
		return StateRestarting
	case crashLooping:
		return StateCrashLooping
	case c.Drift():
		return StateDrifted
	}
	return StateFailing
}

// platformRestarting reports whether an instance in state s is being
// restarted by its platform: not a strike, the platform is healing it.
func platformRestarting(s runtime.State) bool { return s == runtime.StateRestarting }

// assessment is what one look at the runtime found about one service.
type assessment struct {
	cause     Cause
	detail    string
	stopFirst bool
}

// assess compares the runtime's instances of svc with the definition's spec.
func assess(svc definition.Service, spec string, all []runtime.ServiceStatus) assessment {
	var running, restarting, ofSpec, newest *runtime.ServiceStatus
	for i := range all {
		s := &all[i]
		if s.Name != svc.Name {
			continue
		}
		switch {
		case s.State == runtime.StateRunning:
			running = s
		case platformRestarting(s.State):
			restarting = s
		}
		if s.SpecHash == spec && (ofSpec == nil || s.StartedAt.After(ofSpec.StartedAt)) {
			ofSpec = s
		}
		if newest == nil || s.StartedAt.After(newest.StartedAt) {
			newest = s
		}
	}
	switch {
	case running != nil && running.SpecHash != spec:
		return drift(svc, spec, running)
	case running != nil:
		return assessHealth(running)
	case restarting != nil && restarting.SpecHash == spec:
		return assessment{cause: CausePlatformRestarting, detail: fmt.Sprintf("%s is being restarted by the platform (restart count %d)", restarting.ID, restarting.RestartCount)}
	case restarting != nil:
		return drift(svc, spec, restarting)
	case ofSpec != nil && ofSpec.State == runtime.StateStopped:
		return assessment{cause: CauseStopped, detail: fmt.Sprintf("%s (version %s) was stopped on request and not started again", ofSpec.ID, ofSpec.Version)}
	case ofSpec != nil:
		return assessment{cause: CauseExited, detail: fmt.Sprintf("%s (version %s) %s", ofSpec.ID, ofSpec.Version, exitNote(*ofSpec))}
	case newest != nil:
		return assessment{cause: CauseNotRunning, detail: fmt.Sprintf("no instance of the definition's spec (version %s); the newest instance, %s (version %s), is %s", svc.Version, newest.ID, newest.Version, newest.State)}
	}
	return assessment{cause: CauseNotRunning, detail: "the runtime has no instance of it"}
}

func assessHealth(s *runtime.ServiceStatus) assessment {
	switch s.Health.Status {
	case runtime.HealthHealthy, runtime.HealthNone, "":
		return assessment{cause: CauseHealthy}
	case runtime.HealthStarting:
		return assessment{cause: CauseStarting, detail: fmt.Sprintf("%s is starting: no health check has passed yet", s.ID)}
	}
	detail := fmt.Sprintf("%s is unhealthy (%d failed health checks in a row", s.ID, s.Health.FailingStreak)
	if n := len(s.Health.Log); n > 0 {
		l := s.Health.Log[n-1]
		detail += fmt.Sprintf("; last: status %d", l.ExitCode)
		if l.Output != "" {
			detail += fmt.Sprintf(" %q", truncate(l.Output, 80))
		}
	}
	return assessment{cause: CauseUnhealthy, detail: detail + ")", stopFirst: true}
}

func drift(svc definition.Service, spec string, s *runtime.ServiceStatus) assessment {
	if s.Version != svc.Version {
		return assessment{cause: CauseDriftVersion, stopFirst: true, detail: fmt.Sprintf(
			"drift: %s runs version %s, the definition says %s", s.ID, s.Version, svc.Version)}
	}
	return assessment{cause: CauseDriftSpec, stopFirst: true, detail: fmt.Sprintf(
		"drift: %s runs version %s with spec %.12s, the definition's is %.12s (command, environment, image, health check or other settings differ)",
		s.ID, s.Version, s.SpecHash, spec)}
}

func exitNote(s runtime.ServiceStatus) string {
	note := fmt.Sprintf("exited with code %d", s.ExitCode)
	if s.ExitCode == -1 {
		note = "exited (exit code unknown)"
	}
	if s.Signal != "" {
		note += " (" + s.Signal + ")"
	}
	if !s.FinishedAt.IsZero() {
		note += " at " + s.FinishedAt.Format(time.RFC3339)
	}
	return note
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

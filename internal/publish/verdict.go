package publish

import (
	"fmt"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mythex/mythex/internal/platform"
)

// Status is the outcome of judging a release.
type Status string

// Verdict statuses.
const (
	// StatusPending: no decision yet; look again after Verdict.NextLook.
	StatusPending Status = "pending"
	// StatusLive: every machine runs the release, stayed up and answers its
	// health check.
	StatusLive Status = "live"
	// StatusFailed: some machine crashed again after a crash was already seen,
	// the platform gave up restarting it, it never started or never answered
	// its health check in the window, or it runs something else.
	StatusFailed Status = "failed"
	// StatusUnknown: the evidence could not be gathered (control-plane errors,
	// no health check possible) and nothing showed a failure. Never a reason to
	// roll back.
	StatusUnknown Status = "unknown"
)

// HealthResult is the result of one HTTP health check of the app (not the
// prober of package probe, which generates load).
type HealthResult struct {
	// Ran is false when no check was made (no address yet, nothing to probe).
	Ran bool `json:"ran"`
	// OK is true for a 2xx answer within the timeout.
	OK bool `json:"ok"`
	// Status is the HTTP status, 0 when no response came.
	Status int `json:"status,omitempty"`
	// Error says why no response came (refused, timeout), empty otherwise.
	Error string `json:"error,omitempty"`
	// Target is the URL checked.
	Target string `json:"target,omitempty"`
}

// String renders the result for messages: "200", "503", "connection refused".
func (p HealthResult) String() string {
	switch {
	case !p.Ran:
		return "not run"
	case p.Error != "":
		return p.Error
	default:
		return fmt.Sprintf("HTTP %d", p.Status)
	}
}

// ErrKind classifies why a look at a machine failed.
type ErrKind string

// Look error kinds.
const (
	// ErrKindNone: the look succeeded.
	ErrKindNone ErrKind = ""
	// ErrKindControlPlane: the platform's API did not answer (rate limit,
	// timeout, 5xx, network). Says nothing about the app.
	ErrKindControlPlane ErrKind = "control_plane"
	// ErrKindNotFound: the platform says the machine does not exist.
	ErrKindNotFound ErrKind = "not_found"
	// ErrKindOther: any other error (e.g. unauthorized); treated like a
	// control-plane error: no evidence either way.
	ErrKindOther ErrKind = "other"
)

// MachineLook is one look at one machine.
type MachineLook struct {
	// ID is the machine's id.
	ID string `json:"id"`
	// ErrKind and Err say why the platform could not be asked; Machine is
	// then the zero value.
	ErrKind ErrKind `json:"err_kind,omitempty"`
	Err     string  `json:"err,omitempty"`
	// Machine is the machine as the platform returned it.
	Machine platform.Machine `json:"machine"`
	// Health is a direct health check of the machine's own address (does not
	// need the control plane).
	Health HealthResult `json:"probe"`
}

// Look is one look at every machine of the release.
type Look struct {
	// N numbers the looks from 1.
	N int `json:"n"`
	// At is when the look was taken.
	At time.Time `json:"at"`
	// Machines holds one entry per machine of the release.
	Machines []MachineLook `json:"machines"`
	// App is a health check of the app's own endpoint (its public URL, or the
	// load balancer) — set only when that endpoint is served by the release
	// being judged; used for machines without a direct probe.
	App HealthResult `json:"app"`
}

// Policy holds the judge's settings.
type Policy struct {
	// StableFor is how long a machine must stay up (since its latest start or
	// crash, whichever is later) before it can be live — Nomad's
	// min_healthy_time. Default 30s in Options; 0 here means no minimum beyond
	// looking twice.
	StableFor time.Duration `json:"stable_for"`
	// LookInterval is the delay before the next look once machines read
	// started (look 2 after look 1, look 3 after look 2, ...).
	LookInterval time.Duration `json:"look_interval"`
	// PollInterval is the delay between looks while some machine has not read
	// started yet.
	PollInterval time.Duration `json:"poll_interval"`
	// StartPeriod is how long after a machine is first seen started its
	// wrong health answers do not count (compose healthcheck start_period).
	StartPeriod time.Duration `json:"start_period"`
	// UnhealthyThreshold is how many looks in a row after StartPeriod a
	// started machine may answer its health check wrongly (an HTTP status
	// outside 2xx other than 502, 503, 504) before it is failed (the ALB
	// target group's unhealthy threshold); 0 waits for the window's end.
	// Refused connections, timeouts and 502/503/504 are "not ready yet" and
	// never count: a slow boot still goes live.
	UnhealthyThreshold int `json:"unhealthy_threshold"`
	// LoopWindow: a crash less than max(LoopWindow, StableFor) after the
	// previous crash evidence, both on the platform's clock, is a crash
	// loop; a crash after a longer quiet spell is only a warning (two
	// single kills far apart, the release stable in between). 0 with
	// StableFor 0: every new crash after crash evidence is a loop.
	LoopWindow time.Duration `json:"loop_window"`
}

// loopWindow is the effective crash-loop window.
func (p Policy) loopWindow() time.Duration { return max(p.LoopWindow, p.StableFor) }

// Input is everything the judge sees.
type Input struct {
	// Start is t0 on the gate's clock, when the publish began. It is only
	// the last resort for telling old crashes from new ones: the platform's
	// clock may be far off ours, so each machine's t0 is taken on the
	// platform's clock (Since, or the newest launch/update event the looks
	// show), and uptime is measured between our own looks.
	Start time.Time
	// Since gives, per machine id, when the publish's own write (create or
	// update) happened on the platform's clock — the launch or update event
	// the platform answered with. Crashes before it are not counted.
	Since map[string]time.Time
	// Before gives, per machine id, what the machine ran before the publish
	// updated it in place. A look at a machine still running that is "not
	// yet" (the update has not been applied), never failed.
	Before map[string]Prior
	// Now is when the decision is made.
	Now time.Time
	// Deadline ends the window: at or after it, the verdict is final
	// (never pending).
	Deadline time.Time
	// Image is the image (Config.Image) the machines must run; empty skips the
	// check.
	Image string
	// Release is the release id the machines must carry in their metadata;
	// empty skips the check.
	Release string
	// Machines are the ids of the release's machines.
	Machines []string
	// Looks are the looks so far, oldest first.
	Looks []Look
	// Serving, when not nil, lists every machine of the app that serves
	// traffic now; any of them running another image makes the verdict failed
	// (mixed versions after a "successful" deploy).
	Serving []platform.Machine
	// Policy holds the settings.
	Policy Policy
}

// Prior is what a machine ran before a publish: its release id (from the
// config metadata) and image.
type Prior struct {
	Release string `json:"release,omitempty"`
	Image   string `json:"image,omitempty"`
}

// runs reports whether m runs what p describes.
func (p Prior) runs(m platform.Machine) bool {
	if p.Release != "" {
		return m.Release() == p.Release
	}
	return p.Image != "" && m.Config.Image == p.Image && m.Release() == ""
}

// MachineStatus is the per-machine outcome.
type MachineStatus string

// Machine outcomes.
const (
	MachinePending      MachineStatus = "pending"
	MachineOK           MachineStatus = "ok"
	MachineCrashLooping MachineStatus = "crash_looping"
	MachineGaveUp       MachineStatus = "platform_gave_up"
	MachineNotStarted   MachineStatus = "not_started"
	MachineUnhealthy    MachineStatus = "unhealthy"
	MachineWrongImage   MachineStatus = "wrong_image"
	MachineGone         MachineStatus = "gone"
	MachineUnknown      MachineStatus = "unknown"
	// MachineNotUpdated: the platform never applied the update; the machine
	// still runs what it ran before (an unknown verdict, not a failure).
	MachineNotUpdated MachineStatus = "not_updated"
)

// MachineSummary is what the judge found about one machine.
type MachineSummary struct {
	ID     string        `json:"id"`
	Status MachineStatus `json:"status"`
	// State is the state at the last successful look.
	State platform.State `json:"state,omitempty"`
	// CrashesSeen is how many distinct crashes since publish start the looks
	// saw (a lower bound: lists are bounded), raised to the restart-count
	// growth when that is larger.
	CrashesSeen int `json:"crashes_seen"`
	// LatestCrash is the latest crash since publish start seen; zero if none.
	LatestCrash time.Time `json:"latest_crash,omitzero"`
	// LatestExitCode is that crash's exit code (-1 when a signal ended it);
	// LatestSignal the signal (0 none) and LatestOOMKilled whether the
	// kernel's OOM killer did.
	LatestExitCode  int  `json:"latest_exit_code,omitempty"`
	LatestSignal    int  `json:"latest_signal,omitempty"`
	LatestOOMKilled bool `json:"latest_oom_killed,omitempty"`
	// RestartCount is the platform's restart count at the last look, when it
	// gives one.
	RestartCount int `json:"restart_count,omitempty"`
	// StillRestarting is true when the platform was restarting it at the
	// latest crash seen.
	StillRestarting bool `json:"still_restarting"`
	// Healthy is the last health check's outcome.
	Healthy bool `json:"healthy"`
	// ControlPlaneErrors counts looks at this machine the platform did not
	// answer.
	ControlPlaneErrors int `json:"control_plane_errors,omitempty"`
	// UpFor is how long it had stayed up at the last look.
	UpFor time.Duration `json:"up_for,omitempty"`
}

// LatestExit words how the latest crash ended: "exit code 1", "killed by
// signal 9 (SIGKILL)", "killed by signal 9 (SIGKILL), oom_killed".
func (s MachineSummary) LatestExit() string {
	return exitString(s.LatestExitCode, s.LatestSignal, s.LatestOOMKilled)
}

// Verdict is the judge's decision.
type Verdict struct {
	Status Status `json:"status"`
	// Reasons say why the verdict is failed or unknown, one per finding, each
	// naming its machine.
	Reasons []string `json:"reasons,omitempty"`
	// Warnings are findings that did not fail the release (a single crash at
	// boot, control-plane errors that later cleared).
	Warnings []string `json:"warnings,omitempty"`
	// Machines summarises every machine, in input order.
	Machines []MachineSummary `json:"machines"`
	// Looks is how many looks the verdict used.
	Looks int `json:"looks"`
	// NextLook is the delay before the next look when Status is pending.
	NextLook time.Duration `json:"next_look,omitempty"`
}

// Judge decides a release from looks (the rules: docs/publish.md, "How a
// release is judged"). It is a pure function: the
// gate loop takes the looks and applies the verdict.
//
// Per machine, over the looks the platform answered:
//   - a look showing a crash later than the latest crash an earlier look
//     already showed (or the restart count grown, or a new instance start,
//     after crash evidence) means it crashed again since: failed — compared
//     by the latest crash's timestamp, never by counting events in the
//     platform's bounded list;
//   - the platform stopped restarting it: failed;
//   - it runs another image or release: failed;
//   - it is stopped or failed at look 2 or later: failed;
//   - live needs two looks at least (look twice), no new crash between the
//     last two, a look after the first crash evidence, StableFor of uptime
//     and a passing health check.
//
// At the deadline anything still open resolves: never started or never
// healthy is failed; missing evidence because the control plane did not
// answer, or no health check possible, is unknown.
func Judge(in Input) Verdict {
	v := Verdict{Status: StatusLive, Looks: len(in.Looks)}
	final := !in.Now.Before(in.Deadline)
	if len(in.Machines) == 0 {
		v.Status = StatusFailed
		v.Reasons = append(v.Reasons, "the release has no machines")
		return v
	}
	anyPending, anyUnknown, anyFailed, waitingStart := false, false, false, false
	for _, id := range in.Machines {
		j := judgeMachine(in, id, final)
		v.Machines = append(v.Machines, j.summary)
		v.Warnings = append(v.Warnings, j.warnings...)
		switch j.summary.Status {
		case MachineOK:
		case MachinePending:
			anyPending = true
			waitingStart = waitingStart || j.waitingStart
		case MachineUnknown, MachineNotUpdated:
			anyUnknown = true
			v.Reasons = append(v.Reasons, j.reason)
		default:
			anyFailed = true
			v.Reasons = append(v.Reasons, j.reason)
		}
	}
	if !anyFailed && in.Serving != nil {
		if r := mixedVersions(in); r != "" {
			anyFailed = true
			v.Reasons = append(v.Reasons, r)
		}
	}
	switch {
	case anyFailed:
		v.Status = StatusFailed
		// Unknown reasons of other machines stay listed: they are true too.
	case anyPending:
		v.Status = StatusPending
		v.Reasons = nil
		v.NextLook = in.Policy.LookInterval
		if waitingStart && in.Policy.PollInterval > 0 {
			v.NextLook = in.Policy.PollInterval
		}
	case anyUnknown:
		v.Status = StatusUnknown
	}
	return v
}

// machineJudgement is judgeMachine's result.
type machineJudgement struct {
	summary      MachineSummary
	reason       string
	warnings     []string
	waitingStart bool
}

// obs is one look at one machine, reduced to the signals the judge uses.
type obs struct {
	look        int
	at          time.Time // our clock
	ok          bool
	m           platform.Machine
	crashes     []platform.Event // crashes since the machine's t0 in this list
	latestCrash platform.Event   // valid when hasCrash
	hasCrash    bool
	started     time.Time // instance start, platform clock
	probe       HealthResult
}

// machineT0 is when the publish's write reached machine id, on the
// platform's clock: Since when the write's answer said, else the newest
// launch or update event of the first answered look that shows the new
// release, else (no such event left in a trimmed list, or a platform
// without them) the gate's own t0 — the only comparison of the platform's
// clock with ours, and only when nothing better exists.
func machineT0(in Input, id string, answered []MachineLook) time.Time {
	if t, ok := in.Since[id]; ok && !t.IsZero() {
		return t
	}
	prior, hasPrior := in.Before[id]
	for _, ml := range answered {
		if hasPrior && prior.runs(ml.Machine) {
			continue
		}
		var writes []platform.Event
		for _, e := range ml.Machine.Events {
			if e.Type == platform.EventLaunch || e.Type == platform.EventUpdate {
				writes = append(writes, e)
			}
		}
		if e, ok := latest(writes); ok {
			return e.Timestamp
		}
		break
	}
	return in.Start
}

func judgeMachine(in Input, id string, final bool) machineJudgement {
	j := machineJudgement{summary: MachineSummary{ID: id, Status: MachinePending}}
	s := &j.summary

	var answered []MachineLook
	for _, l := range in.Looks {
		for _, ml := range l.Machines {
			if ml.ID == id && ml.ErrKind == ErrKindNone {
				answered = append(answered, ml)
			}
		}
	}
	mt0 := machineT0(in, id, answered)
	prior, hasPrior := in.Before[id]

	var all []obs // every look at id
	var ok []obs  // the looks the platform answered, on the new release
	notFoundAfterSeen := false
	notYet := 0 // answered looks still showing the machine's previous release
	var notYetM platform.Machine
	lastCPErr := ""
	for _, l := range in.Looks {
		for _, ml := range l.Machines {
			if ml.ID != id {
				continue
			}
			o := obs{look: l.N, at: l.At, probe: ml.Health}
			if !o.probe.Ran && l.App.Ran {
				o.probe = l.App
			}
			switch ml.ErrKind {
			case ErrKindNone:
				if hasPrior && len(ok) == 0 && prior.runs(ml.Machine) {
					// The update has not reached it yet (a slow or unanswered
					// update call): not yet, never failed. Its health is the
					// old release's, so it says nothing either.
					notYet++
					notYetM = ml.Machine
					o.probe = HealthResult{}
					all = append(all, o)
					continue
				}
				o.ok, o.m = true, ml.Machine
				policy := ml.Machine.Config.Restart.Effective().Policy
				o.crashes = crashesSince(ml.Machine.Events, mt0, policy)
				o.latestCrash, o.hasCrash = latest(o.crashes)
				o.started = instanceStart(ml.Machine)
				ok = append(ok, o)
			case ErrKindNotFound:
				notFoundAfterSeen = notFoundAfterSeen || len(ok) > 0
				s.ControlPlaneErrors++
				lastCPErr = ml.Err
			default:
				s.ControlPlaneErrors++
				lastCPErr = ml.Err
			}
			all = append(all, o)
		}
	}
	if len(all) > 0 {
		last := all[len(all)-1]
		s.Healthy = last.probe.Ran && last.probe.OK
	}
	fillCrashSummary(s, ok, mt0)

	fail := func(st MachineStatus, format string, args ...any) machineJudgement {
		s.Status = st
		j.reason = fmt.Sprintf("machine %s: ", id) + fmt.Sprintf(format, args...)
		return j
	}

	if notFoundAfterSeen {
		return fail(MachineGone, "disappeared during the publish (the platform no longer knows it)")
	}

	// Walk the answered looks in order: find crash loops, give-ups, wrong
	// images, wrong health answers.
	hadCrash := false         // crash evidence up to the previous answered look
	var lastCrashAt time.Time // platform clock: the newest crash evidence so far
	streak := 0               // trailing answered looks, started, with no new crash between them
	wrong := 0                // trailing looks after the start period answering the health check wrongly
	for i, o := range ok {
		if in.Image != "" && o.m.Config.Image != "" && o.m.Config.Image != in.Image {
			return fail(MachineWrongImage, "runs image %s, not the published %s (something replaced or rolled it back)", o.m.Config.Image, in.Image)
		}
		if rel := o.m.Release(); in.Release != "" && rel != "" && rel != in.Release {
			return fail(MachineWrongImage, "runs release %s, not the published %s", rel, in.Release)
		}
		if e, gave := gaveUp(o.m); gave {
			return fail(MachineGaveUp, "%s, and the platform is not restarting it (state %s, restart policy %s)",
				crashHistory(s, e), o.m.State, policyString(o.m.Config.Restart))
		}
		if a, b, two := twoNewestCrashes(o.crashes); two && (in.Policy.loopWindow() <= 0 || b.Sub(a) < in.Policy.loopWindow()) {
			// One look's own list already holds two crashes since the
			// publish, closer than the loop window: the evidence exists
			// now, no need to wait for another look.
			s.StillRestarting = true
			if s.CrashesSeen < 2 {
				s.CrashesSeen = 2
			}
			return fail(MachineCrashLooping, "crashed %s since the publish started (latest %s at %s); look %d shows crashes at %s and %s, %s apart, so it is still restarting",
				atLeast(s.CrashesSeen), exitString(s.LatestExitCode, s.LatestSignal, s.LatestOOMKilled), clock(s.LatestCrash), o.look,
				clock(a), clock(b), b.Sub(a).Round(time.Millisecond))
		}
		newCrash := false
		if i > 0 {
			newCrash = crashedBetween(ok[i-1], o)
			if newCrash && hadCrash {
				at, known := newCrashAt(ok[i-1], o)
				// Only a crash within the loop window of the previous one is
				// a loop, both times on the platform's clock: a release that
				// stayed up that long in between crashed twice, it is not
				// still restarting.
				if in.Policy.loopWindow() <= 0 || !known || lastCrashAt.IsZero() || at.Sub(lastCrashAt) < in.Policy.loopWindow() {
					s.StillRestarting = true
					return fail(MachineCrashLooping, "%s", loopMessage(s, ok[i-1], o))
				}
				j.warnings = append(j.warnings, fmt.Sprintf("machine %s: crashed again at %s, %s after its previous crash — longer than the %s crash-loop window, so not a crash loop",
					id, clock(at), at.Sub(lastCrashAt).Round(time.Millisecond), in.Policy.loopWindow()))
			}
			if newCrash {
				if at, known := newCrashAt(ok[i-1], o); known {
					lastCrashAt = at
				}
			}
		}
		if !newCrash && o.hasCrash && o.latestCrash.At().After(lastCrashAt) {
			lastCrashAt = o.latestCrash.At()
		}
		hadCrash = hadCrash || newCrash || o.hasCrash
		switch {
		case o.m.State != platform.StateStarted:
			streak = 0
		case newCrash || streak == 0:
			streak = 1
		default:
			streak++
		}
		// Health answers count only once the machine has been seen started
		// for the start period, on our clock.
		if streak > 0 && o.at.Sub(ok[i-streak+1].at) >= in.Policy.StartPeriod && wrongAnswer(o.probe) {
			wrong++
		} else {
			wrong = 0
		}
		if in.Policy.UnhealthyThreshold > 0 && wrong >= in.Policy.UnhealthyThreshold {
			return fail(MachineUnhealthy, "started and answers its health check, but wrongly: %s at %s at %d looks in a row after its %s start period",
				o.probe, o.probe.Target, wrong, in.Policy.StartPeriod)
		}
	}

	if len(ok) == 0 {
		if notYet > 0 {
			if !final {
				j.waitingStart = true
				return j
			}
			s.Status, s.State = MachineNotUpdated, notYetM.State
			j.reason = fmt.Sprintf("machine %s: still runs %s — the platform has not applied the update (the update call was refused or did not answer); nothing was rolled back",
				id, priorString(prior))
			return j
		}
		return unresolved(j, in, final, all, lastCPErr)
	}
	last := ok[len(ok)-1]
	s.State = last.m.State
	lookTwo := len(ok) >= 2

	// State at look 2 and later.
	if (last.m.State == platform.StateStopped || last.m.State == platform.StateSuspended) && platformStopped(last.m) {
		// The platform itself stopped it on purpose (Fly Proxy autostop):
		// not a crash, and not serving to be judged either.
		if !final {
			return j
		}
		s.Status = MachineUnknown
		j.reason = fmt.Sprintf("machine %s: %s by the platform (autostop) at look %d before it could be judged; it did not crash — nothing rolled back",
			id, last.m.State, last.look)
		return j
	}
	if lookTwo && last.m.State != platform.StateStarted {
		switch {
		case last.m.State.Transient() || last.m.State == platform.StateCreated:
			// Starting, restarting, replacing, updating: the next look decides.
		case last.m.State == platform.StateLaunchFailed:
			return fail(MachineNotStarted, "the platform could not launch it (state launch_failed at look %d)", last.look)
		case last.m.State == platform.StateSuspended:
			return fail(MachineNotStarted, "is suspended at look %d, not started", last.look)
		default:
			return fail(MachineNotStarted, "is %s at look %d, not started", last.m.State, last.look)
		}
	}
	if last.m.State != platform.StateStarted {
		j.waitingStart = true
		if !final {
			return j
		}
		return fail(MachineNotStarted, "did not reach started within the window (state %s at look %d)", last.m.State, last.look)
	}

	// Uptime: since the first look of the trailing streak, on our own clock.
	// The platform's start and crash times are on its clock, which may be
	// far off ours; between our looks nothing newer happened, so this is a
	// lower bound that no skew can stretch.
	s.UpFor = in.Now.Sub(ok[len(ok)-streak].at)

	lastAll := all[len(all)-1]
	stale := !lastAll.ok // the newest look could not see the machine
	healthy := last.probe.Ran && last.probe.OK
	if stale {
		healthy = lastAll.probe.Ran && lastAll.probe.OK
	}
	stable := streak >= 2 && s.UpFor >= in.Policy.StableFor && !stale

	if stable && healthy {
		s.Status = MachineOK
		if s.CrashesSeen > 0 {
			j.warnings = append(j.warnings, fmt.Sprintf("machine %s: crashed %s since the publish started (latest %s at %s), then stayed up for %s",
				id, times(s.CrashesSeen), exitString(s.LatestExitCode, s.LatestSignal, s.LatestOOMKilled), s.LatestCrash.UTC().Format(time.RFC3339Nano), s.UpFor.Round(time.Millisecond)))
		}
		if s.ControlPlaneErrors > 0 {
			j.warnings = append(j.warnings, fmt.Sprintf("machine %s: the platform did not answer %s (%s)", id, times(s.ControlPlaneErrors), lastCPErr))
		}
		return j
	}
	if !final {
		return j
	}
	// The window is over and the machine is not proven live.
	anyProbe := false
	for _, o := range all {
		anyProbe = anyProbe || o.probe.Ran
	}
	switch {
	case anyProbe && !healthy:
		p := lastAll.probe
		if !p.Ran {
			p = last.probe
		}
		return fail(MachineUnhealthy, "never passed its health check within the window (last: %s at %s)", p, p.Target)
	case !anyProbe:
		s.Status = MachineUnknown
		j.reason = fmt.Sprintf("machine %s: no health check could be made (no address and no app URL); cannot say it serves", id)
	case stale || streak < 2:
		return unresolved(j, in, final, all, lastCPErr)
	default:
		s.Status = MachineUnknown
		j.reason = fmt.Sprintf("machine %s: up for %s, less than the %s it must stay up, when the window ended",
			id, s.UpFor.Round(time.Millisecond), in.Policy.StableFor)
	}
	return j
}

// twoNewestCrashes returns the times of the two newest distinct crashes in
// crashes, oldest first, and whether there are two.
func twoNewestCrashes(crashes []platform.Event) (time.Time, time.Time, bool) {
	var ts []time.Time
	seen := map[int64]bool{}
	for _, c := range crashes {
		if k := c.At().UnixNano(); !seen[k] {
			seen[k] = true
			ts = append(ts, c.At())
		}
	}
	if len(ts) < 2 {
		return time.Time{}, time.Time{}, false
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	return ts[len(ts)-2], ts[len(ts)-1], true
}

// platformStopped reports whether m's newest exit (or suspend) was the
// platform's own doing on purpose — a requested stop whose source is not the
// user (Fly Proxy's autostop) — rather than a crash or an operator's stop.
func platformStopped(m platform.Machine) bool {
	var newest []platform.Event
	for _, e := range m.Events {
		if e.Type == platform.EventExit || e.Type == platform.EventSuspend {
			newest = append(newest, e)
		}
	}
	e, ok := latest(newest)
	if !ok || e.Source == "user" || e.Source == "" {
		return false
	}
	return e.Type == platform.EventSuspend || (e.Exit != nil && e.Exit.RequestedStop)
}

// wrongAnswer reports whether p is an answer that is not a "not ready yet":
// an HTTP status outside 2xx other than 502, 503 and 504 (what a booting app
// or a proxy in front of it says). Refused connections and timeouts are not
// answers.
func wrongAnswer(p HealthResult) bool {
	if !p.Ran || p.OK || p.Status == 0 {
		return false
	}
	switch p.Status {
	case 502, 503, 504:
		return false
	}
	return true
}

func priorString(p Prior) string {
	switch {
	case p.Release != "" && p.Image != "":
		return fmt.Sprintf("release %s (image %s)", p.Release, p.Image)
	case p.Release != "":
		return "release " + p.Release
	default:
		return "image " + p.Image
	}
}

// newCrashAt is when b's new crash (per crashedBetween) happened, on the
// platform's clock: its latest crash when that moved, else its new start
// (a restart follows a crash by the restart delay). known is false when only
// a grown restart count shows it.
func newCrashAt(a, b obs) (time.Time, bool) {
	if b.hasCrash && (!a.hasCrash || b.latestCrash.At().After(a.latestCrash.At())) {
		return b.latestCrash.At(), true
	}
	if !b.started.IsZero() && b.started.After(a.started) {
		return b.started, true
	}
	return time.Time{}, false
}

// unresolved handles a machine the platform did not let us see enough of.
func unresolved(j machineJudgement, in Input, final bool, all []obs, lastCPErr string) machineJudgement {
	s := &j.summary
	if !final {
		return j
	}
	var p HealthResult
	for _, o := range all {
		if o.probe.Ran {
			p = o.probe
		}
	}
	if p.Ran && !p.OK {
		s.Status = MachineUnhealthy
		j.reason = fmt.Sprintf("machine %s: the platform did not answer (%s) and the app failed its health check (%s at %s)", s.ID, lastCPErr, p, p.Target)
		return j
	}
	s.Status = MachineUnknown
	app := "no health check could be made"
	if p.Ran {
		app = fmt.Sprintf("the app answers its health check (%s at %s)", p, p.Target)
	}
	j.reason = fmt.Sprintf("machine %s: the platform did not answer %s (%s), so its crashes could not be checked; %s — not rolling back on control-plane errors alone",
		s.ID, times(s.ControlPlaneErrors), lastCPErr, app)
	return j
}

// crashedBetween reports whether b (a later look) shows the machine crashed
// or restarted after a: a later latest-crash timestamp, a grown restart count
// or a new start of the same instance. None of these can be hidden by a
// bounded event list: the newest event is always kept.
func crashedBetween(a, b obs) bool {
	if b.hasCrash && (!a.hasCrash || b.latestCrash.At().After(a.latestCrash.At())) {
		return true
	}
	sameInstance := a.m.InstanceID == b.m.InstanceID
	if sameInstance && a.m.HasRestartCount && b.m.HasRestartCount && b.m.RestartCount > a.m.RestartCount {
		return true
	}
	if sameInstance && a.m.State == platform.StateStarted && !a.started.IsZero() && b.started.After(a.started) {
		return true
	}
	return false
}

// fillCrashSummary fills the crash fields of s from the answered looks.
func fillCrashSummary(s *MachineSummary, ok []obs, t0 time.Time) {
	seen := map[int64]bool{}
	for _, o := range ok {
		for _, c := range o.crashes {
			seen[c.At().UnixNano()] = true
		}
		if o.hasCrash && o.latestCrash.At().After(s.LatestCrash) {
			s.LatestCrash = o.latestCrash.At()
			if x := o.latestCrash.Exit; x != nil {
				s.LatestExitCode, s.LatestSignal, s.LatestOOMKilled = x.ExitCode, x.Signal, x.OOMKilled
				s.StillRestarting = x.Restarting
			}
		}
	}
	s.CrashesSeen = len(seen)
	// Distinct starts of one instance after its first: each is a restart.
	starts := map[string]map[int64]bool{}
	for _, o := range ok {
		if o.m.State != platform.StateStarted || o.started.Before(t0) {
			continue
		}
		if starts[o.m.InstanceID] == nil {
			starts[o.m.InstanceID] = map[int64]bool{}
		}
		starts[o.m.InstanceID][o.started.UnixNano()] = true
	}
	for _, st := range starts {
		if len(st)-1 > s.CrashesSeen {
			s.CrashesSeen = len(st) - 1
		}
	}
	// Restart-count growth within one instance is a second lower bound.
	if len(ok) > 0 {
		first, last := ok[0].m, ok[len(ok)-1].m
		if last.HasRestartCount {
			s.RestartCount = last.RestartCount
		}
		if first.InstanceID == last.InstanceID && first.HasRestartCount && last.HasRestartCount {
			grown := last.RestartCount - first.RestartCount
			if ok[0].hasCrash {
				grown++ // the first look's own crash came before its count
			}
			if grown > s.CrashesSeen {
				s.CrashesSeen = grown
			}
		}
	}
}

func crashHistory(s *MachineSummary, newestExit platform.Event) string {
	code := "no exit details"
	if x := newestExit.Exit; x != nil {
		code = exitString(x.ExitCode, x.Signal, x.OOMKilled)
	}
	if s.CrashesSeen == 0 {
		return fmt.Sprintf("exited (%s)", code)
	}
	return fmt.Sprintf("crashed %s since the publish started (last: %s)", atLeast(s.CrashesSeen), code)
}

// loopMessage words a crash loop found between looks a and b.
func loopMessage(s *MachineSummary, a, b obs) string {
	if s.CrashesSeen < 2 {
		s.CrashesSeen = 2 // evidence at one look and a newer crash at a later one
	}
	var what string
	switch {
	case b.hasCrash && a.hasCrash:
		what = fmt.Sprintf("its latest crash moved from %s (look %d) to %s (look %d)",
			clock(a.latestCrash.At()), a.look, clock(b.latestCrash.At()), b.look)
	case b.hasCrash:
		what = fmt.Sprintf("it crashed again at %s, before look %d", clock(b.latestCrash.At()), b.look)
	case a.m.HasRestartCount && b.m.HasRestartCount && b.m.RestartCount > a.m.RestartCount:
		what = fmt.Sprintf("its restart count grew from %d (look %d) to %d (look %d)", a.m.RestartCount, a.look, b.m.RestartCount, b.look)
	default:
		what = fmt.Sprintf("it started again at %s (look %d; previous start %s)", clock(b.started), b.look, clock(a.started))
	}
	last := ""
	if !s.LatestCrash.IsZero() {
		last = fmt.Sprintf(" (latest %s at %s)", exitString(s.LatestExitCode, s.LatestSignal, s.LatestOOMKilled), clock(s.LatestCrash))
	}
	return fmt.Sprintf("crashed %s since the publish started%s; %s, so it is still restarting", atLeast(s.CrashesSeen), last, what)
}

// exitString words how a process ended: "exit code 1", "killed by signal 9
// (SIGKILL)", "killed by signal 9 (SIGKILL), oom_killed". A signal shows
// as the signal, never as the exit code -1 platforms report with it.
func exitString(code, signal int, oom bool) string {
	var s string
	switch {
	case signal > 0:
		s = fmt.Sprintf("killed by signal %d", signal)
		if name := unix.SignalName(syscall.Signal(signal)); name != "" {
			s += " (" + name + ")"
		}
	case oom:
		s = "killed"
	default:
		s = fmt.Sprintf("exit code %d", code)
	}
	if oom {
		s += ", oom_killed"
	}
	return s
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

func policyString(r platform.Restart) string {
	r = r.Effective()
	if r.Policy == platform.RestartOnFailure {
		return fmt.Sprintf("on-failure, max_retries %d", r.MaxRetries)
	}
	return string(r.Policy)
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func atLeast(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("at least %d times", n)
}

// mixedVersions returns a reason when a serving machine runs another image
// than in.Image (or carries another release), or "".
func mixedVersions(in Input) string {
	var odd []string
	for _, m := range in.Serving {
		if m.State != platform.StateStarted {
			continue
		}
		if p, ok := in.Before[m.ID]; ok && p.runs(m) {
			continue // not updated yet: judged per machine ("not yet")
		}
		if (in.Image != "" && m.Config.Image != in.Image) || (in.Release != "" && m.Release() != "" && m.Release() != in.Release) {
			odd = append(odd, fmt.Sprintf("%s (%s)", m.ID, m.Config.Image))
		}
	}
	if len(odd) == 0 {
		return ""
	}
	sort.Strings(odd)
	return fmt.Sprintf("mixed versions: machines still serving another image after the switch: %s", strings.Join(odd, ", "))
}

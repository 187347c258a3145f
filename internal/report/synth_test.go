package report

import (
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/fleet"
)

var t0 = time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)

// synthetic is a recording of a rolling deploy v1 → v2 over hosts, under
// rate req/s for secs seconds: each host gets an equal slice of the run,
// drained, stopped, started and returned; failHost (if ≥ 0) fails verify and
// is rolled back, and the seconds of its stop drop requests.
func synthetic(hosts, secs int, rate int64, failHost int) deployrec.Recording {
	cfg := fleet.Default()
	for i := range hosts {
		cfg.Hosts = append(cfg.Hosts, fleet.Host{Name: fmt.Sprintf("web-%d", i+1)})
	}
	f, inv := deployrec.FleetOf(cfg)
	d := deployrec.Deploy{From: "v1", Version: "v2", Hosts: f.Hosts, Start: t0, End: t0.Add(time.Duration(secs) * time.Second)}
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ev := func(s float64, host string, p deploy.Phase, k deploy.EventKind, detail string) {
		d.Events = append(d.Events, deploy.Event{At: at(s), Host: host, Phase: p, Kind: k, Detail: detail})
	}
	tg := func(s float64, host, state string, in bool) {
		d.Events = append(d.Events, deploy.Event{At: at(s), Host: host, Kind: deploy.EventTarget, Target: &deploy.TargetState{State: state, InRotation: in}})
	}
	for _, h := range f.Hosts {
		tg(0.2, h, "healthy", true)
	}
	slice := float64(secs-6) / float64(hosts)
	res := &deployrec.Result{OK: failHost < 0, Seconds: float64(secs - 4)}
	downFrom, downTo := -1.0, -1.0
	for i, h := range f.Hosts {
		b := 2 + float64(i)*slice
		phases := []deploy.Phase{deploy.PhaseLease, deploy.PhasePublish, deploy.PhaseDrain, deploy.PhaseStop, deploy.PhaseStart, deploy.PhaseHealthy, deploy.PhaseVerify, deploy.PhaseRelease}
		share := []float64{0.02, 0.03, 0.3, 0.2, 0.15, 0.15, 0.1, 0.05}
		t := b
		hr := deploy.HostResult{Host: h, OK: true}
		for j, p := range phases {
			dur := share[j] * slice
			ev(t, h, p, deploy.EventBegin, "")
			if p == deploy.PhaseDrain {
				tg(t+0.1, h, "draining", false)
				tg(t+dur-0.1, h, "unused", false)
			}
			if p == deploy.PhaseHealthy {
				tg(t+0.1, h, "initial", false)
				tg(t+dur-0.1, h, "healthy", true)
			}
			if i == failHost && p == deploy.PhaseStop {
				downFrom, downTo = t, t+dur
			}
			if i == failHost && p == deploy.PhaseVerify {
				ev(t+dur, h, p, deploy.EventFail, "v2 answered 500 on /healthz")
				ev(t+dur, h, deploy.PhaseRollback, deploy.EventBegin, "")
				ev(t+dur+1, h, deploy.PhaseRollback, deploy.EventEnd, "back on v1")
				hr.OK, hr.RolledBack, hr.Failed = false, true, p
				break
			}
			ev(t+dur, h, p, deploy.EventEnd, "")
			hr.Phases = append(hr.Phases, deploy.PhaseTime{Phase: p, Seconds: dur})
			t += dur
		}
		res.Hosts = append(res.Hosts, hr)
		if i == failHost {
			res.Error = fmt.Sprintf("host %s failed at verify: v2 answered 500 on /healthz; rolled back to its previous version and verified", h)
			break
		}
	}
	if failHost < 0 {
		ev(float64(secs-4), "", deploy.PhaseSweep, deploy.EventBegin, "")
		ev(float64(secs)-3.5, "", deploy.PhaseSweep, deploy.EventEnd, "")
	}
	d.Result = res
	p := &deployrec.Probe{URL: "http://127.0.0.1:9080/", Rate: float64(rate), StartedAt: t0, Totals: &deployrec.Totals{}}
	for s := range secs {
		sec := deployrec.Second{Second: s, Counts: deployrec.Counts{Requests: rate}, P50Ms: 1 + float64(s%7)/10, P99Ms: 4 + float64(s%13)}
		if float64(s) >= downFrom && float64(s) < downTo {
			sec.ReachedNothing = rate / 3
		}
		if s%17 == 5 {
			sec.DrainSignals = 2
		}
		sec.OK = rate - sec.ReachedNothing - sec.DrainSignals
		v2 := min(rate, max(0, int64(float64(rate)*(float64(s)-2)/float64(secs-6))))
		sec.Versions = map[string]int64{}
		if rate-v2-sec.ReachedNothing > 0 {
			sec.Versions["v1"] = rate - v2 - sec.ReachedNothing
		}
		if v2 > 0 {
			sec.Versions["v2"] = v2
		}
		p.Seconds = append(p.Seconds, sec)
		p.Totals.Requests += sec.Requests
		p.Totals.OK += sec.OK
		p.Totals.ReachedNothing += sec.ReachedNothing
		p.Totals.DrainSignals += sec.DrainSignals
	}
	p.Totals.P50Ms, p.Totals.P99Ms = 1.2, 14
	if p.Totals.ReachedNothing > 0 {
		p.Totals.Reasons = []deployrec.Reason{{Class: "reached_nothing", What: "refused", Count: p.Totals.ReachedNothing}}
	}
	d.Probe = p
	return deployrec.Recording{Format: deployrec.FormatVersion, Command: "mythex demo", CreatedAt: t0, Fleet: &f, Invariants: inv, Deploys: []deployrec.Deploy{d}}
}

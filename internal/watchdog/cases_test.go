package watchdog

// Public cases (../shared/cases, kinds watchdog-vs-deploy,
// watchdog-vs-maintenance, config-drift) as tests. Each fixture is written in
// mythex's own terms — a definition, a runtime, a schedule of rounds — and
// names the case it comes from; the expectation is the verdict a correct
// watchdog gives. Where a case shows the unsafe original, the same schedule
// is run with the original's settings and must show the failure, so the
// fixture can tell the two apart.

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

// noLock is a host lock that is always free: a watchdog that knows nothing
// of deploys (monit, docker-autoheal).
type noLock struct{}

func (noLock) TryLock(string) error { return nil }
func (noLock) Unlock() error        { return nil }

// Case sidekiq-506-monit-restarts (watchdog-vs-deploy): the deploy stops the
// worker while a process monitor still watches it; the monitor starts the old
// version again mid-deploy and the host ends up with two workers. Fixed:
// the deploy holds the host lock from stop to start, so the watchdog skips
// every round in between and never starts the old version.
func TestCase_Sidekiq506_MonitRestartsDuringDeploy(t *testing.T) {
	tests := []struct {
		name        string
		lockAware   bool
		k           int
		wantRevived bool
	}{
		{"original: a monitor outside the lock, one failure is enough", false, 1, true},
		{"fixed: the deploy holds the host lock", true, 4, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v1 := newDefinition(t, "v1", "api", "publish-worker")
			e := newEnv(t, Policy{Interval: time.Minute, FailuresBeforeHeal: tc.k}, v1)
			if !tc.lockAware {
				w, err := New(Config{Definitions: e.store, Runtime: e.rt, Lock: noLock{}, StateDir: e.dir, Policy: e.policy, Clock: e.clock})
				if err != nil {
					t.Fatal(err)
				}
				e.w = w
			}
			ctx := context.Background()
			e.round()

			// The deploy, step by step, with a watchdog round between steps.
			deploy := e.otherLock("deploy: v2 by cap")
			if _, err := e.rt.Stop(ctx, "publish-worker", runtime.UseSpecGrace); err != nil {
				t.Fatal(err)
			}
			e.rt.takeCalls()
			e.round()
			revived := slices.Contains(e.rt.takeCalls(), "start publish-worker v1")
			v2 := newDefinition(t, "v2", "api", "publish-worker")
			if _, err := e.store.Publish(v2); err != nil {
				t.Fatal(err)
			}
			e.round()
			e.rt.runAll(v2)
			e.round()
			_ = deploy.Unlock()
			if revived != tc.wantRevived {
				t.Fatalf("old worker started by the watchdog mid-deploy: %v, want %v", revived, tc.wantRevived)
			}
			if tc.wantRevived {
				return
			}
			for range 5 {
				e.round()
			}
			sts, _ := e.rt.Status(ctx)
			var workers []string
			for _, s := range sts {
				if s.Name == "publish-worker" && s.Running() {
					workers = append(workers, s.Version)
				}
			}
			if !slices.Equal(workers, []string{"v2"}) {
				t.Errorf("running workers = %v, want exactly one, v2", workers)
			}
		})
	}
}

// bootingService models a service that takes boot to start serving: its
// health check reports starting until unhealthyAfter (the end of its start
// period plus interval × retries), unhealthy from then until boot, and
// healthy after. A heal starts it over.
type bootingService struct {
	svc            definition.Service
	boot           time.Duration
	unhealthyAfter time.Duration
	startedAt      time.Time
}

func (b *bootingService) status(now time.Time) []runtime.ServiceStatus {
	up := now.Sub(b.startedAt)
	h := runtime.HealthStarting
	switch {
	case up >= b.boot:
		h = runtime.HealthHealthy
	case up >= b.unhealthyAfter:
		h = runtime.HealthUnhealthy
	}
	s := inst(b.svc, runtime.StateRunning, h)
	s.StartedAt = b.startedAt
	return []runtime.ServiceStatus{s}
}

// Case autoheal-53-slow-start-loop (watchdog-vs-deploy): a container that
// takes minutes to start was restarted by autoheal while still starting, a
// reboot loop in which it never finishes. The verdict: unsafe whenever the
// health check turns unhealthy before the service has booted, and the
// restarter does not wait long enough; safe when the start period covers
// the boot. mythex's watchdog waits while a service is starting and adds
// (K−1)·W of patience once it turns unhealthy; a start period that covers
// the boot is always safe. One far too short still loops — but backed off,
// not restarted as fast as possible: the growing wait outgrows the boot and
// the service comes up.
func TestCase_Autoheal53_SlowStart(t *testing.T) {
	p := Policy{Interval: time.Minute, FailuresBeforeHeal: 4}.WithDefaults()
	tests := []struct {
		name           string
		boot           time.Duration
		unhealthyAfter time.Duration // start_period + interval × retries
		wantHeals      bool
	}{
		{"start period covers a 5-minute boot: never healed", 5 * time.Minute, 5*time.Minute + 15*time.Second, false},
		{"unhealthy at 40s of a 4-minute boot: the patience covers it", 4 * time.Minute, 40 * time.Second, false},
		{"unhealthy at 40s of a 10-minute boot: loops, backs off until it boots", 10 * time.Minute, 40 * time.Second, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &bootingService{svc: service("api", "v1"), boot: tc.boot, unhealthyAfter: tc.unhealthyAfter, startedAt: t0}
			var rec Record
			var heals []time.Time
			for now := t0.Add(time.Second); now.Before(t0.Add(2 * time.Hour)); now = now.Add(p.Interval) {
				var d Decision
				rec, d = Decide(rec, Observation{Now: now, Service: b.svc, Instances: b.status(now)}, p)
				if d.Kind == KindHeal {
					heals = append(heals, now)
					b.startedAt = now
				}
			}
			if (len(heals) > 0) != tc.wantHeals {
				t.Fatalf("heals at %v, want healed: %v", heals, tc.wantHeals)
			}
			if rec.State != StateOK {
				t.Errorf("final state %s, want ok", rec.State)
			}
			if !tc.wantHeals {
				return
			}
			if len(heals) < 3 {
				t.Fatalf("heals at %v: want a loop of at least 3", heals)
			}
			for i := 2; i < len(heals); i++ {
				if gap, prev := heals[i].Sub(heals[i-1]), heals[i-1].Sub(heals[i-2]); gap <= prev {
					t.Errorf("heal gaps %v then %v: want growing (backoff)", prev, gap)
				}
			}
		})
	}

	// "status_seen: restarting + unhealthy": the platform restarting the
	// container is never a strike.
	svc := service("api", "v1")
	var rec Record
	for i := range 20 {
		var d Decision
		rec, d = Decide(rec, Observation{Now: t0.Add(time.Duration(i) * time.Minute), Service: svc,
			Instances: []runtime.ServiceStatus{inst(svc, runtime.StateRestarting, runtime.HealthUnhealthy)}}, p)
		if d.Kind != KindWait {
			t.Fatalf("round %d with the platform restarting: %s, want wait", i, d.Kind)
		}
	}
}

// Case autoheal-78-maintenance (watchdog-vs-maintenance): a database
// optimisation makes a container unhealthy for "a few minutes" (the report
// gives no number; the fixture uses 10) and autoheal restarts it mid-way —
// on the first unhealthy check (tmknight#110). Fixed: healing paused for the
// maintenance, or a patience longer than the maintenance.
func TestCase_Autoheal78_Maintenance(t *testing.T) {
	const work = 10 * time.Minute
	tests := []struct {
		name        string
		k           int
		maintenance bool
		wantHeal    bool
	}{
		{"original: first unhealthy check restarts it", 1, false, true},
		{"default patience (3 × 60s) is shorter than the work", 4, false, true},
		{"maintenance mode for 15m", 4, true, false},
		{"patience (11 × 60s) longer than the work", 12, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{Interval: time.Minute, FailuresBeforeHeal: tc.k}.WithDefaults()
			svc := service("db", "v1")
			var m *Maintenance
			if tc.maintenance {
				mm, err := NewMaintenance(t0, 15*time.Minute, "db optimize", "ops")
				if err != nil {
					t.Fatal(err)
				}
				m = &mm
			}
			var rec Record
			healed := false
			for now := t0.Add(time.Second); now.Before(t0.Add(time.Hour)); now = now.Add(p.Interval) {
				h := runtime.HealthHealthy
				if now.Before(t0.Add(work)) {
					h = runtime.HealthUnhealthy
				}
				var d Decision
				rec, d = Decide(rec, Observation{Now: now, Service: svc, Maintenance: m,
					Instances: []runtime.ServiceStatus{inst(svc, runtime.StateRunning, h)}}, p)
				if d.Kind == KindHeal {
					healed = true
				}
				if tc.maintenance && now.Before(t0.Add(15*time.Minute)) && d.Kind != KindSkipMaintenance {
					t.Fatalf("at %v during maintenance: %s, want skip-maintenance", now.Sub(t0), d.Kind)
				}
			}
			if healed != tc.wantHeal {
				t.Errorf("restarted during the %v of work: %v, want %v", work, healed, tc.wantHeal)
			}
			if rec.State != StateOK {
				t.Errorf("final state %s, want ok", rec.State)
			}
		})
	}
}

// Case autoheal-cve-search-45-scope (watchdog-vs-maintenance, scope): a
// host-wide autoheal shipped with one project restarted another project's
// backup container that stopped answering for 10 s. Fixed: scope. mythex's
// watchdog acts only on services of the host's published definition; an
// unrelated service, unhealthy or dead, is never touched.
func TestCase_AutohealCveSearch45_Scope(t *testing.T) {
	d := newDefinition(t, "v1", "cve-search", "mongo")
	e := newEnv(t, Policy{Interval: time.Minute, FailuresBeforeHeal: 1}, d)
	backup := service("duplicati", "2.0")
	e.rt.running(backup, runtime.HealthHealthy)
	e.rt.health("duplicati", runtime.HealthUnhealthy)
	for range 5 {
		e.round()
	}
	e.rt.crash("duplicati")
	for range 5 {
		e.round()
	}
	if calls := e.rt.takeCalls(); len(calls) != 0 {
		t.Errorf("the watchdog acted outside its definition: %v", calls)
	}
	for _, s := range e.w.Status().Services {
		if s.Name == "duplicati" {
			t.Errorf("status lists an unrelated service: %+v", s)
		}
	}
}

// The config-drift cases: what runs on a host differs from the one
// definition. The verdict for each is "drift reported" (a drift checker's
// FAIL); the watchdog also heals it after K rounds by starting the
// definition's spec, and never edits the definition to match the host.
func TestCase_ConfigDrift(t *testing.T) {
	withEnv := func(s definition.Service, k, v string) definition.Service {
		s.Environment = map[string]string{}
		for kk, vv := range service(s.Name, s.Version).Environment {
			s.Environment[kk] = vv
		}
		s.Environment[k] = v
		return s
	}
	tests := []struct {
		name    string
		caseID  string
		def     definition.Service
		running definition.Service
		want    Cause
	}{
		{
			// drift-betterfleet-655: the host had a hand edit (an extra
			// host entry) the repository's compose file lacked.
			name: "host-only edit", caseID: "drift-betterfleet-655",
			def:     service("backend", "v1.4.2"),
			running: withEnv(service("backend", "v1.4.2"), "EXTRA_HOSTS", "betterfleet.fr=10.0.0.2"),
			want:    CauseDriftSpec,
		},
		{
			// drift-betterfleet-655, the other direction: the repository
			// had a health check the host's copy lacked.
			name: "definition-only health check", caseID: "drift-betterfleet-655",
			def: service("keycloak", "v1.4.2"),
			running: func() definition.Service {
				s := service("keycloak", "v1.4.2")
				s.Healthcheck = nil
				return s
			}(),
			want: CauseDriftSpec,
		},
		{
			// drift-breeze-4922: images moved on, the compose file did not.
			name: "newer image than the definition", caseID: "drift-breeze-4922",
			def:     service("caddy", "v0.103.0"),
			running: service("caddy", "v0.104.0"),
			want:    CauseDriftVersion,
		},
		{
			// drift-breeze-4922: same version, a setting missing (the pinned
			// address the new release needs).
			name: "setting missing on the host", caseID: "drift-breeze-4922",
			def:     withEnv(service("breeze", "v0.104.0"), "TRUSTED_PROXY_CIDRS", "172.30.0.10/32"),
			running: service("breeze", "v0.104.0"),
			want:    CauseDriftSpec,
		},
		{
			// drift-neotoma-restart-policy: the file says restart always, the
			// running machine has on-failure with 10 retries; a checker that
			// skips the restart policy misses it. The spec hash covers it.
			name: "restart policy differs", caseID: "drift-neotoma-restart-policy",
			def: func() definition.Service {
				s := service("neotoma", "v1")
				s.Restart = definition.RestartPolicy{Policy: definition.RestartAlways}
				return s
			}(),
			running: func() definition.Service {
				s := service("neotoma", "v1")
				s.Restart = definition.RestartPolicy{Policy: definition.RestartOnFailure, MaxRetries: 10}
				return s
			}(),
			want: CauseDriftSpec,
		},
	}
	for _, tc := range tests {
		t.Run(tc.caseID+": "+tc.name, func(t *testing.T) {
			d := &definition.Definition{Version: tc.def.Version, Source: definition.Source{File: "/srv/compose.yaml", SHA256: "00"},
				Services: []definition.Service{tc.def}}
			if err := d.Seal(); err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, defaultPolicy, d)
			e.rt.running(tc.running, runtime.HealthHealthy)
			refs := e.refsBytes()
			for i := 1; i <= 3; i++ {
				got := decision(t, e.round(), tc.def.Name)
				if got.Kind != KindDrift || got.Cause != tc.want {
					t.Fatalf("round %d: %s/%s (%s), want drift/%s", i, got.Kind, got.Cause, got.Detail, tc.want)
				}
			}
			if st := e.record(tc.def.Name); st.State != StateDrifted || !strings.Contains(st.Reason, "drift") {
				t.Errorf("status = %+v, want drifted, reported", st)
			}
			if got := decision(t, e.round(), tc.def.Name); got.Kind != KindHeal || !got.StopFirst {
				t.Fatalf("4th round: %+v, want heal replacing the instance", got)
			}
			if got := decision(t, e.round(), tc.def.Name); got.Kind != KindOK {
				t.Errorf("after heal: %s, want ok: the definition's spec runs", got.Kind)
			}
			if string(refs) != string(e.refsBytes()) {
				t.Error("the definition was changed to match the host")
			}
		})
	}
}

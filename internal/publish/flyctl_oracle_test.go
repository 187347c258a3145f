package publish

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/platform"
)

// This file holds flyctl's smoke-check rule, implemented only here, as an
// oracle to compare the gate with on the same event sequences (flyctl is the reference mythex must be
// at least as good as).
// The rule, from superfly/flyctl internal/machine/leasable_machine.go
// (WaitForSmokeChecksToPass, isConstantlyRestarting) and superfly/fly-go
// machine_types.go (MostRecentStartTimeAfterLaunch), read for behaviour only:
//   - poll the machine with a backoff (0.5 s doubling to 2 s) for 10 s;
//   - pass as soon as the uptime since the newest start after the newest
//     launch exceeds 10 s and the machine is not "constantly restarting";
//   - fail when the newest exit event is not a requested stop, is restarting,
//     has restart_count > 1 and a non-zero exit code;
//   - fail the deploy when the API errors;
//   - pass when the 10 s window runs out.

type smokeOutcome string

const (
	smokePass  smokeOutcome = "passes"
	smokeFail  smokeOutcome = "fails (crashing)"
	smokeError smokeOutcome = "fails (API error)"
)

// mostRecentStartAfterLaunch mirrors fly-go's rule over events newest first.
func mostRecentStartAfterLaunch(events []platform.Event) (time.Time, bool) {
	firstStart, firstLaunch, firstExit := -1, -1, -1
	for i, e := range events {
		switch e.Type {
		case platform.EventStart:
			if firstStart == -1 {
				firstStart = i
			}
		case platform.EventLaunch:
			if firstLaunch == -1 {
				firstLaunch = i
			}
		case platform.EventExit:
			if firstExit == -1 {
				firstExit = i
			}
		}
		if firstStart != -1 && firstLaunch != -1 {
			break
		}
	}
	switch {
	case firstStart == -1, firstStart >= firstLaunch, firstExit != -1 && firstExit <= firstStart:
		return time.Time{}, false
	}
	return events[firstStart].Timestamp, true
}

func isConstantlyRestarting(m platform.Machine) bool {
	for _, e := range m.Events {
		if e.Type != platform.EventExit {
			continue
		}
		x := e.Exit
		return x != nil && !x.RequestedStop && x.Restarting && e.RestartCount > 1 && x.ExitCode != 0
	}
	return false
}

// flyctlSmokeCheck runs the oracle against machine id of the fake platform,
// moving the fake clock itself. It returns the outcome and how long after
// its start it came.
func flyctlSmokeCheck(p *fakePlatform, clock *clockwork.FakeClock, app, id string) (smokeOutcome, time.Duration) {
	out := flyctlSmokeRule(p, clock, app, id)
	return out, clock.Since(t0)
}

func flyctlSmokeRule(p *fakePlatform, clock *clockwork.FakeClock, app, id string) smokeOutcome {
	begin := clock.Now()
	wait := 500 * time.Millisecond
	for {
		m, err := p.Get(context.Background(), app, id)
		uptime := time.Duration(0)
		if started, ok := mostRecentStartAfterLaunch(m.Events); ok && err == nil {
			uptime = clock.Since(started)
		}
		switch {
		case err == nil && uptime > 10*time.Second && !isConstantlyRestarting(m):
			return smokePass
		case clock.Since(begin) >= 10*time.Second:
			return smokePass
		case err != nil:
			return smokeError
		case isConstantlyRestarting(m):
			return smokeFail
		}
		clock.Advance(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

// oracleScenario is one event sequence both judges see.
type oracleScenario struct {
	name     string
	beh      behavior
	restart  platform.Restart
	capacity int
	apiDown  bool
	why      string
}

var oracleScenarios = []oracleScenario{
	{name: "crash 2.5 s after every boot, exit 1 (the write-up's app)", beh: behaviors[imgCrash], restart: platform.Restart{Policy: platform.RestartOnFailure},
		why: "flyctl sees restart_count 2 with a non-zero code inside 10 s; mythex sees two crashes in one look, 2.7 s apart"},
	{name: "the same with only the newest event kept", beh: behaviors[imgCrash], restart: platform.Restart{Policy: platform.RestartOnFailure}, capacity: 1,
		why: "no exit and no launch left in the list: flyctl can compute neither; the newest start's time still moves"},
	{name: "exit 0 every 2 s under restart policy always", beh: behaviors[imgExit0], restart: platform.Restart{Policy: platform.RestartAlways},
		why: "flyctl ignores exit code 0; a server exiting under `always` is a crash"},
	{name: "crash 6 s after every boot, exit 1", beh: behavior{crashAfter: 6 * time.Second, exitCode: 1}, restart: platform.Restart{Policy: platform.RestartOnFailure},
		why: "restart_count is still 1 when flyctl's 10 s run out"},
	{name: "crash 12 s after every boot, exit 1", beh: behaviors[imgLate], restart: platform.Restart{Policy: platform.RestartOnFailure},
		why: "uptime passes 10 s before the first crash; mythex's stable window is 30 s"},
	{name: "on-failure, max_retries 1, crash 0.5 s after boot", beh: behaviors[imgFast], restart: platform.Restart{Policy: platform.RestartOnFailure, MaxRetries: 1},
		why: "the newest exit is not restarting, so not \"constantly restarting\"; the platform gave up"},
	{name: "one crash at boot, then stable", beh: behaviors[imgCrashBoot], restart: platform.Restart{Policy: platform.RestartOnFailure},
		why: "both pass; mythex warns about the crash"},
	{name: "healthy after a slow 8 s boot", beh: behaviors[imgSlowBoot], restart: platform.Restart{Policy: platform.RestartOnFailure},
		why: "both pass"},
	{name: "runs, never answers its health check", beh: behaviors[imgUnhealthy], restart: platform.Restart{Policy: platform.RestartOnFailure},
		why: "the smoke check looks at events only; mythex requires the app's own health check"},
	{name: "Machines API answers 429 while the app serves 200", beh: behaviors[imgGood], restart: platform.Restart{Policy: platform.RestartOnFailure}, apiDown: true,
		why: "flyctl fails the deploy on the API error (a false failure); mythex says unknown and rolls nothing back"},
}

// mythexVerdict runs the gate on a first publish of the scenario and returns
// the verdict and how long after the publish began it came.
func (s oracleScenario) mythexVerdict(t *testing.T) (Status, time.Duration) {
	t.Helper()
	e := newEnv(t, false, Options{})
	img := "app:scenario"
	e.p.behaviors = map[string]behavior{img: s.beh}
	if s.capacity > 0 {
		e.p.capacity = s.capacity
	}
	if s.apiDown {
		e.p.failGet = func(time.Time, string) error { return fmt.Errorf("429 Too Many Requests: %w", platform.ErrRateLimited) }
	}
	r := Request{App: "api", Config: platform.Config{Image: img, Restart: s.restart}, Health: Health{AppURL: "http://api.app.test/healthz"}}
	res := e.publish(t, r)
	return res.Verdict.Status, e.verdictAt(res.Release.ID).Sub(t0)
}

// flyctlVerdict runs the oracle on a fresh machine of the scenario.
func (s oracleScenario) flyctlVerdict(t *testing.T) (smokeOutcome, time.Duration) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(t0)
	p := newFakePlatform(clock)
	p.behaviors = map[string]behavior{"app:scenario": s.beh}
	if s.capacity > 0 {
		p.capacity = s.capacity
	}
	m, err := p.Create(context.Background(), "api", platform.Config{Image: "app:scenario", Restart: s.restart})
	if err != nil {
		t.Fatal(err)
	}
	// flyctl starts its smoke check once the machine has started.
	clock.Advance(p.startDelay)
	if s.apiDown {
		p.failGet = func(time.Time, string) error { return platform.ErrRateLimited }
	}
	return flyctlSmokeCheck(p, clock, "api", m.ID)
}

// TestFlyctlOracle_ComparedWithTheGate runs both judges on every scenario,
// checks the gate is right on each, and checks docs/publish.md's comparison
// table says what the two actually did.
func TestFlyctlOracle_ComparedWithTheGate(t *testing.T) {
	t.Parallel() // its own fake platforms, clocks and stores
	want := map[string]Status{
		oracleScenarios[0].name: StatusFailed, oracleScenarios[1].name: StatusFailed, oracleScenarios[2].name: StatusFailed,
		oracleScenarios[3].name: StatusFailed, oracleScenarios[4].name: StatusFailed, oracleScenarios[5].name: StatusFailed,
		oracleScenarios[6].name: StatusLive, oracleScenarios[7].name: StatusLive, oracleScenarios[8].name: StatusFailed,
		oracleScenarios[9].name: StatusUnknown,
	}
	var rows []string
	for _, s := range oracleScenarios {
		fly, flyAt := s.flyctlVerdict(t)
		ours, oursAt := s.mythexVerdict(t)
		if ours != want[s.name] {
			t.Errorf("%s: mythex = %s, want %s", s.name, ours, want[s.name])
		}
		rows = append(rows, fmt.Sprintf("| %s | %s at %s | %s at %s | %s |", s.name, fly, secs(flyAt), ours, secs(oursAt), s.why))
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "publish.md"))
	if err != nil {
		t.Fatalf("docs/publish.md: %v", err)
	}
	for _, r := range rows {
		if !strings.Contains(string(doc), r) {
			t.Errorf("docs/publish.md lacks the row (update the table):\n%s", r)
		}
	}
	if t.Failed() {
		t.Logf("table rows as measured:\n%s", strings.Join(rows, "\n"))
	}
}

func TestMostRecentStartAfterLaunch(t *testing.T) {
	t.Parallel() // a pure function of its inputs
	tests := []struct {
		name   string
		events []platform.Event
		ok     bool
	}{
		{"start after launch", []platform.Event{start(2), launch(1)}, true},
		{"no launch kept", []platform.Event{start(5), crash(4, 1, 1), start(2)}, false},
		{"exit newest", []platform.Event{crash(3, 1, 1), start(2), launch(1)}, false},
		{"no start", []platform.Event{launch(1)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := mostRecentStartAfterLaunch(tt.events); ok != tt.ok {
				t.Errorf("ok = %v, want %v", ok, tt.ok)
			}
		})
	}
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

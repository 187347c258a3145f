package publish

import (
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/platform"
)

func TestJudge(t *testing.T) {
	t.Parallel() // judges its own inputs
	S, St := platform.StateStarted, platform.StateStopped
	always, onFail, no := platform.RestartAlways, platform.RestartOnFailure, platform.RestartNo
	boot := []platform.Event{start(0.5), launch(0.1)}

	// A machine that crashes every 2.5 s, its list trimmed to five.
	loop := func(upTo float64) []platform.Event {
		var ev []platform.Event
		ev = append(ev, launch(0.1), start(0.2))
		rc := 0
		for t := 2.7; t <= upTo; t += 2.5 {
			rc++
			ev = append(ev, crash(t, 1, rc), start(t+0.1))
		}
		return platform.TrimEvents(newestFirst(ev...), 5)
	}

	tests := []struct {
		name        string
		in          Input
		want        Status
		wantMachine MachineStatus
		wantReason  []string // substrings of the joined reasons
		wantWarn    []string // substrings of the joined warnings
		wantNext    time.Duration
	}{
		{
			name:        "healthy: looked twice, stable, health passes -> live",
			in:          input(15, 120, lookAt(1, 1, mach(S, always, boot...), okProbe), lookAt(2, 15, mach(S, always, boot...), okProbe)),
			want:        StatusLive,
			wantMachine: MachineOK,
		},
		{
			name:     "one look is never enough (look twice) -> pending",
			in:       input(20, 120, lookAt(1, 20, mach(S, always, boot...), okProbe)),
			want:     StatusPending,
			wantNext: 5 * time.Second,
		},
		{
			name: "not up for StableFor yet -> pending",
			in:   input(6, 120, lookAt(1, 1, mach(S, always, boot...), okProbe), lookAt(2, 6, mach(S, always, boot...), okProbe)),
			want: StatusPending,
		},
		{
			name: "crash loop with a five-event list: latest crash moves between look 2 and 3 -> failed",
			in: input(11, 120,
				lookAt(1, 1, mach(S, always, loop(1)...), okProbe),
				lookAt(2, 6, mach(S, always, loop(6)...), okProbe),
				lookAt(3, 11, mach(S, always, loop(11)...), refused)),
			want:        StatusFailed,
			wantMachine: MachineCrashLooping,
			wantReason:  []string{"machine m1", "crashed at least", "since the publish started", "still restarting", "exit code 1"},
		},
		{
			name:        "first crash seen at look 2 -> pending for look 3",
			in:          input(6, 120, lookAt(1, 1, mach(S, always, boot...), okProbe), lookAt(2, 6, mach(S, always, newestFirst(launch(0.1), start(0.2), crash(3, 1, 1), start(3.1))...), okProbe)),
			want:        StatusPending,
			wantMachine: MachinePending,
		},
		{
			name: "one crash at boot then stable -> live with a warning",
			in: input(20, 120,
				lookAt(1, 1, mach(S, always, boot...), okProbe),
				lookAt(2, 6, mach(S, always, newestFirst(launch(0.1), start(0.2), crash(3, 1, 1), start(3.1))...), okProbe),
				lookAt(3, 11, mach(S, always, newestFirst(launch(0.1), start(0.2), crash(3, 1, 1), start(3.1))...), okProbe),
				lookAt(4, 20, mach(S, always, newestFirst(launch(0.1), start(0.2), crash(3, 1, 1), start(3.1))...), okProbe)),
			want:        StatusLive,
			wantMachine: MachineOK,
			wantWarn:    []string{"machine m1", "crashed once since the publish started", "exit code 1", "then stayed up"},
		},
		{
			name:        "on-failure retries exhausted: stopped, last exit not restarting -> failed",
			in:          input(3, 120, lookAt(1, 3, mach(St, onFail, newestFirst(crash(1, 1, 9), start(1.2), crash(1.5, 1, 10), start(1.7), finalExit(2, 1, 10))...), refused)),
			want:        StatusFailed,
			wantMachine: MachineGaveUp,
			wantReason:  []string{"machine m1", "not restarting it", "on-failure"},
		},
		{
			name:        "restart policy no: one crash leaves it stopped -> failed",
			in:          input(3, 120, lookAt(1, 3, mach(St, no, newestFirst(launch(0.1), start(0.2), finalExit(1, 2, 0))...), refused)),
			want:        StatusFailed,
			wantMachine: MachineGaveUp,
			wantReason:  []string{"crashed once since the publish started (last: exit code 2)", "restart policy no"},
		},
		{
			name: "exit-0 loop under always: clean exits are crashes for a server -> failed",
			in: input(11, 120,
				lookAt(1, 1, mach(S, always, boot...), okProbe),
				lookAt(2, 6, mach(S, always, newestFirst(start(0.5), crash(3, 0, 1), start(3.1))...), okProbe),
				lookAt(3, 11, mach(S, always, newestFirst(start(0.5), crash(3, 0, 1), start(3.1), crash(7, 0, 2), start(7.1))...), okProbe)),
			want:        StatusFailed,
			wantMachine: MachineCrashLooping,
			wantReason:  []string{"latest exit code 0"},
		},
		{
			name:        "clean exit under on-failure: stopped, not restarted -> failed",
			in:          input(6, 120, lookAt(1, 1, mach(S, onFail, boot...), okProbe), lookAt(2, 6, mach(St, onFail, newestFirst(start(0.5), finalExit(4, 0, 0))...), refused)),
			want:        StatusFailed,
			wantMachine: MachineGaveUp,
			wantReason:  []string{"exited (exit code 0)"},
		},
		{
			name:        "stopped on request during the publish at look 2 -> failed, not started",
			in:          input(6, 120, lookAt(1, 1, mach(S, always, boot...), okProbe), lookAt(2, 6, mach(St, always, newestFirst(start(0.5), requestedStop(4))...), refused)),
			want:        StatusFailed,
			wantMachine: MachineNotStarted,
			wantReason:  []string{"is stopped at look 2"},
		},
		{
			name: "machine runs another image (rolled back under us) -> failed",
			in: func() Input {
				m := mach(S, always, boot...)
				m.Config.Image = "app:v1"
				return input(15, 120, lookAt(1, 1, m, okProbe), lookAt(2, 15, m, okProbe))
			}(),
			want:        StatusFailed,
			wantMachine: MachineWrongImage,
			wantReason:  []string{"runs image app:v1, not the published app:v2"},
		},
		{
			name: "machine carries another release -> failed",
			in: func() Input {
				m := mach(S, always, boot...)
				m.Config.Metadata = map[string]string{platform.MetadataRelease: "v1"}
				in := input(15, 120, lookAt(1, 1, m, okProbe), lookAt(2, 15, m, okProbe))
				in.Release = "v2"
				return in
			}(),
			want:        StatusFailed,
			wantMachine: MachineWrongImage,
			wantReason:  []string{"runs release v1, not the published v2"},
		},
		{
			name: "slow boot: health fails until 8 s, then passes -> live",
			in: input(20, 120,
				lookAt(1, 1, mach(S, always, boot...), refused),
				lookAt(2, 6, mach(S, always, boot...), refused),
				lookAt(3, 11, mach(S, always, boot...), okProbe),
				lookAt(4, 20, mach(S, always, boot...), okProbe)),
			want:        StatusLive,
			wantMachine: MachineOK,
		},
		{
			name:        "slow boot still booting, window open -> pending",
			in:          input(11, 120, lookAt(1, 1, mach(S, always, boot...), refused), lookAt(2, 11, mach(S, always, boot...), refused)),
			want:        StatusPending,
			wantMachine: MachinePending,
		},
		{
			name:        "never answers its health check by the deadline -> failed",
			in:          input(60, 60, lookAt(1, 1, mach(S, always, boot...), badProbe), lookAt(2, 60, mach(S, always, boot...), badProbe)),
			want:        StatusFailed,
			wantMachine: MachineUnhealthy,
			wantReason:  []string{"never passed its health check", "HTTP 503"},
		},
		{
			name:        "never reaches started by the deadline -> failed",
			in:          input(60, 60, lookAt(1, 1, mach(platform.StateCreated, always), HealthResult{}), lookAt(2, 60, mach(platform.StateStarting, always), HealthResult{})),
			want:        StatusFailed,
			wantMachine: MachineNotStarted,
			wantReason:  []string{"did not reach started within the window"},
		},
		{
			name:        "still starting at look 2, window open -> pending, polling",
			in:          input(6, 120, lookAt(1, 1, mach(platform.StateCreated, always), HealthResult{}), lookAt(2, 6, mach(platform.StateStarting, always), HealthResult{})),
			want:        StatusPending,
			wantMachine: MachinePending,
			wantNext:    time.Second,
		},
		{
			name: "restarting at look 2 after a crash -> pending (look 3 decides)",
			in: input(6, 120, lookAt(1, 1, mach(S, always, boot...), okProbe),
				lookAt(2, 6, mach(platform.StateRestarting, always, newestFirst(start(0.5), crash(5.9, 1, 1))...), refused)),
			want: StatusPending,
		},
		{
			name:        "control plane 429 at every look, the app answers 200 -> unknown, no failure",
			in:          input(60, 60, cpErr(1, 1, okProbe), cpErr(2, 6, okProbe), cpErr(3, 60, okProbe)),
			want:        StatusUnknown,
			wantMachine: MachineUnknown,
			wantReason:  []string{"did not answer 3 times", "429", "the app answers its health check", "not rolling back"},
		},
		{
			name:        "control plane errors and the app does not answer either -> failed by the health check",
			in:          input(60, 60, cpErr(1, 1, refused), cpErr(2, 60, refused)),
			want:        StatusFailed,
			wantMachine: MachineUnhealthy,
			wantReason:  []string{"failed its health check", "connection refused"},
		},
		{
			name: "control plane errors before the deadline -> pending",
			in:   input(6, 60, cpErr(1, 1, okProbe), cpErr(2, 6, okProbe)),
			want: StatusPending,
		},
		{
			name: "control plane errors that clear -> live with a warning",
			in: input(20, 120, cpErr(1, 1, okProbe), lookAt(2, 6, mach(S, always, boot...), okProbe),
				cpErr(3, 11, okProbe), lookAt(4, 20, mach(S, always, boot...), okProbe)),
			want:        StatusLive,
			wantMachine: MachineOK,
			wantWarn:    []string{"did not answer 2 times"},
		},
		{
			name: "control plane fails at the last look of the window -> unknown, not live",
			in: input(60, 60, lookAt(1, 1, mach(S, always, boot...), okProbe), lookAt(2, 20, mach(S, always, boot...), okProbe),
				cpErr(3, 60, okProbe)),
			want:        StatusUnknown,
			wantMachine: MachineUnknown,
		},
		{
			name: "restart count grows with no events at all (docker-like) -> failed",
			in: func() Input {
				m := func(rc int, st float64) platform.Machine {
					m := mach(S, always)
					m.RestartCount, m.HasRestartCount, m.StartedAt = rc, true, at(st)
					return m
				}
				return input(11, 120, lookAt(1, 1, m(0, 0.5), okProbe), lookAt(2, 6, m(2, 5), okProbe), lookAt(3, 11, m(4, 10), okProbe))
			}(),
			want:        StatusFailed,
			wantMachine: MachineCrashLooping,
			wantReason:  []string{"restart count grew from 2 (look 2) to 4 (look 3)"},
		},
		{
			name: "restart count grows once then holds -> live with a warning",
			in: func() Input {
				m := func(rc int, st float64) platform.Machine {
					m := mach(S, always)
					m.RestartCount, m.HasRestartCount, m.StartedAt = rc, true, at(st)
					return m
				}
				return input(20, 120, lookAt(1, 0.5, m(0, 0.2), okProbe), lookAt(2, 6, m(1, 2), okProbe), lookAt(3, 11, m(1, 2), okProbe), lookAt(4, 20, m(1, 2), okProbe))
			}(),
			want:        StatusLive,
			wantMachine: MachineOK,
			wantWarn:    []string{"crashed once"},
		},
		{
			name: "a one-event list shows only the newest start; its time still moves -> failed",
			in: input(11, 120,
				lookAt(1, 1, mach(S, always, start(0.6)), okProbe),
				lookAt(2, 6, mach(S, always, start(5.6)), okProbe),
				lookAt(3, 11, mach(S, always, start(10.6)), okProbe)),
			want:        StatusFailed,
			wantMachine: MachineCrashLooping,
			wantReason:  []string{"it started again at 12:00:10.600 (look 3"},
		},
		{
			name: "a new instance (update) between looks is not a crash",
			in: func() Input {
				a := mach(S, always, start(-100))
				b := mach(S, always, newestFirst(start(-100), requestedStop(2), platform.Event{Type: platform.EventUpdate, Timestamp: at(2.1)}, start(2.5))...)
				b.InstanceID = "i2"
				return input(20, 120, lookAt(1, 1, a, okProbe), lookAt(2, 6, b, okProbe), lookAt(3, 20, b, okProbe))
			}(),
			want:        StatusLive,
			wantMachine: MachineOK,
		},
		{
			name: "crashes before the publish started do not count",
			in: func() Input {
				ev := newestFirst(crash(-30, 1, 3), start(-29), crash(-20, 1, 4), start(-19), start(0.5))
				return input(15, 120, lookAt(1, 1, mach(S, always, ev...), okProbe), lookAt(2, 15, mach(S, always, ev...), okProbe))
			}(),
			want:        StatusLive,
			wantMachine: MachineOK,
		},
		{
			name: "the machine disappears after being seen -> failed",
			in: input(6, 120, lookAt(1, 1, mach(S, always, boot...), okProbe),
				Look{N: 2, At: at(6), Machines: []MachineLook{{ID: "m1", ErrKind: ErrKindNotFound, Err: "404 machine not found"}}}),
			want:        StatusFailed,
			wantMachine: MachineGone,
		},
		{
			name: "OOM kill is a crash",
			in: func() Input {
				oom := func(secs float64, rc int) platform.Event {
					e := crash(secs, 137, rc)
					e.Exit.OOMKilled = true
					return e
				}
				return input(11, 120, lookAt(1, 1, mach(S, onFail, newestFirst(start(0.2), oom(0.8, 1), start(0.9))...), okProbe),
					lookAt(2, 6, mach(S, onFail, newestFirst(start(0.2), oom(0.8, 1), start(0.9), oom(5, 2), start(5.1))...), okProbe))
			}(),
			want:        StatusFailed,
			wantMachine: MachineCrashLooping,
		},
		{
			name: "events out of order are not trusted: the latest crash is the maximum",
			in: input(11, 120,
				lookAt(1, 1, mach(S, always, crash(0.5, 1, 1), start(0.6)), okProbe),
				lookAt(2, 6, mach(S, always, crash(0.5, 1, 1), start(5.6), crash(5.5, 1, 2)), okProbe)),
			want:        StatusFailed,
			wantMachine: MachineCrashLooping,
		},
		{
			name: "stable but shorter than StableFor when the window ends -> unknown",
			in: input(30, 30, lookAt(1, 26, mach(S, always, newestFirst(start(0.1), crash(25, 1, 1), start(25.1))...), okProbe),
				lookAt(2, 30, mach(S, always, newestFirst(start(0.1), crash(25, 1, 1), start(25.1))...), okProbe)),
			want:        StatusUnknown,
			wantMachine: MachineUnknown,
			wantReason:  []string{"less than the 10s it must stay up"},
		},
		{
			name:        "no health check possible at all -> unknown at the deadline",
			in:          input(60, 60, lookAt(1, 1, mach(S, always, boot...), HealthResult{}), lookAt(2, 60, mach(S, always, boot...), HealthResult{})),
			want:        StatusUnknown,
			wantMachine: MachineUnknown,
			wantReason:  []string{"no health check could be made"},
		},
		{
			name: "the app's own endpoint stands in for a machine without an address",
			in: func() Input {
				l1 := lookAt(1, 1, mach(S, always, boot...), HealthResult{})
				l2 := lookAt(2, 15, mach(S, always, boot...), HealthResult{})
				l1.App, l2.App = okProbe, okProbe
				return input(15, 120, l1, l2)
			}(),
			want:        StatusLive,
			wantMachine: MachineOK,
		},
		{
			name:       "no machines -> failed",
			in:         Input{Start: t0, Now: at(1), Deadline: at(60)},
			want:       StatusFailed,
			wantReason: []string{"no machines"},
		},
		{
			name: "mixed versions serving after the switch -> failed",
			in: func() Input {
				in := input(15, 120, lookAt(1, 1, mach(S, always, boot...), okProbe), lookAt(2, 15, mach(S, always, boot...), okProbe))
				old := mach(S, always)
				old.ID, old.Config.Image = "m0", "app:v1"
				in.Serving = []platform.Machine{mach(S, always), old}
				return in
			}(),
			want:       StatusFailed,
			wantReason: []string{"mixed versions", "m0 (app:v1)"},
		},
		{
			name: "a stopped machine of the old image does not count as serving",
			in: func() Input {
				in := input(15, 120, lookAt(1, 1, mach(S, always, boot...), okProbe), lookAt(2, 15, mach(S, always, boot...), okProbe))
				old := mach(St, always)
				old.ID, old.Config.Image = "m0", "app:v1"
				in.Serving = []platform.Machine{mach(S, always), old}
				return in
			}(),
			want: StatusLive,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.in)
			if v.Status != tt.want {
				t.Fatalf("Judge() = %v, want status %s", v, tt.want)
			}
			if tt.wantMachine != "" {
				if len(v.Machines) != 1 || v.Machines[0].Status != tt.wantMachine {
					t.Errorf("machine summary = %+v, want status %s", v.Machines, tt.wantMachine)
				}
			}
			reasons, warns := strings.Join(v.Reasons, "\n"), strings.Join(v.Warnings, "\n")
			for _, w := range tt.wantReason {
				if !strings.Contains(reasons, w) {
					t.Errorf("reasons %q lack %q", reasons, w)
				}
			}
			for _, w := range tt.wantWarn {
				if !strings.Contains(warns, w) {
					t.Errorf("warnings %q lack %q", warns, w)
				}
			}
			if tt.want == StatusLive && len(tt.wantWarn) == 0 && len(v.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", v.Warnings)
			}
			if tt.wantNext != 0 && v.NextLook != tt.wantNext {
				t.Errorf("NextLook = %s, want %s", v.NextLook, tt.wantNext)
			}
		})
	}
}

func TestJudge_TwoMachinesNamesTheCrashingOne(t *testing.T) {
	t.Parallel() // judges its own inputs
	good := mach(platform.StateStarted, platform.RestartAlways, start(0.5))
	good.ID = "m1"
	mk := func(upTo float64) platform.Machine {
		var ev []platform.Event
		ev = append(ev, start(0.2))
		rc := 0
		for tt := 2.7; tt <= upTo; tt += 2.5 {
			rc++
			ev = append(ev, crash(tt, 3, rc), start(tt+0.1))
		}
		m := mach(platform.StateStarted, platform.RestartAlways, platform.TrimEvents(newestFirst(ev...), 5)...)
		m.ID = "m2"
		return m
	}
	look := func(n int, secs float64) Look {
		return Look{N: n, At: at(secs), Machines: []MachineLook{{ID: "m1", Machine: good, Health: okProbe}, {ID: "m2", Machine: mk(secs), Health: refused}}}
	}
	in := Input{Start: t0, Now: at(11), Deadline: at(120), Image: "app:v2", Machines: []string{"m1", "m2"},
		Looks: []Look{look(1, 1), look(2, 6), look(3, 11)}, Policy: Policy{StableFor: 10 * time.Second, LookInterval: 5 * time.Second}}
	v := Judge(in)
	if v.Status != StatusFailed {
		t.Fatalf("Judge() = %v, want failed", v)
	}
	if len(v.Reasons) != 1 || !strings.Contains(v.Reasons[0], "machine m2") || !strings.Contains(v.Reasons[0], "exit code 3") {
		t.Errorf("reasons = %q, want one naming m2 and its exit code", v.Reasons)
	}
	if v.Machines[0].Status != MachineOK || v.Machines[1].Status != MachineCrashLooping {
		t.Errorf("machines = %+v", v.Machines)
	}
	if v.Machines[1].CrashesSeen < 3 {
		t.Errorf("m2 CrashesSeen = %d, want at least 3 (crashes at 2.7, 5.2, 7.7, 10.2)", v.Machines[1].CrashesSeen)
	}
}

func TestIsCrash(t *testing.T) {
	t.Parallel() // judges its own inputs
	always, onFail, no := platform.RestartAlways, platform.RestartOnFailure, platform.RestartNo
	tests := []struct {
		name   string
		e      platform.Event
		policy platform.RestartPolicy
		want   bool
	}{
		{"non-zero exit", finalExit(1, 1, 0), no, true},
		{"exit 0 under always", finalExit(1, 0, 0), always, true},
		{"exit 0 the platform restarted from", crash(1, 0, 1), onFail, true},
		{"exit 0 under on-failure, not restarted", finalExit(1, 0, 0), onFail, false},
		{"requested stop is never a crash", requestedStop(1), always, false},
		{"signal", platform.Event{Type: platform.EventExit, Exit: &platform.Exit{Signal: 9}}, no, true},
		{"OOM", platform.Event{Type: platform.EventExit, Exit: &platform.Exit{OOMKilled: true}}, no, true},
		{"exit without details", platform.Event{Type: platform.EventExit}, no, true},
		{"a start is not a crash", start(1), always, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsCrash(tt.e, tt.policy); got != tt.want {
				t.Errorf("IsCrash() = %v, want %v", got, tt.want)
			}
		})
	}
}

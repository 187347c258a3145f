package lb

import (
	"encoding/json"
	"testing"
)

func TestNext(t *testing.T) {
	th := Thresholds{Healthy: 3, Unhealthy: 2}
	pass := Event{Kind: EventCheck, Check: CheckResult{Outcome: CheckPassed, Status: 200}}
	code503 := Event{Kind: EventCheck, Check: CheckResult{Outcome: CheckCodeMismatch, Status: 503}}
	timeout := Event{Kind: EventCheck, Check: CheckResult{Outcome: CheckTimedOut}}
	refused := Event{Kind: EventCheck, Check: CheckResult{Outcome: CheckConnFailed, Err: "connection refused"}}
	internal := Event{Kind: EventCheck, Check: CheckResult{Outcome: CheckInternalError}}
	healthy := Health{State: StateHealthy}
	unhealthy := func(r Reason, failures, passes int) Health {
		return Health{State: StateUnhealthy, Reason: r, Description: describe(r, 503), Failures: failures, Passes: passes}
	}
	draining := Health{State: StateDraining, Reason: ReasonDeregistrationInProgress, Description: describe(ReasonDeregistrationInProgress, 0)}
	unused := Health{State: StateUnused, Reason: ReasonNotRegistered, Description: describe(ReasonNotRegistered, 0)}

	tests := []struct {
		name        string
		from        Health
		ev          Event
		wantState   State
		wantReason  Reason
		wantPasses  int
		wantFails   int
		wantChanged bool
	}{
		{"new target passes once: healthy (ALB: must pass one check)", NewHealth(), pass, StateHealthy, ReasonNone, 1, 0, true},
		{"new target fails once: still initial, checking", NewHealth(), code503, StateInitial, ReasonInitialHealthChecking, 0, 1, true},
		{"initial fails up to the unhealthy threshold: unhealthy", Health{State: StateInitial, Reason: ReasonInitialHealthChecking, Failures: 1}, refused, StateUnhealthy, ReasonFailedHealthChecks, 0, 2, true},
		{"initial with one failure then a pass: healthy", Health{State: StateInitial, Reason: ReasonInitialHealthChecking, Failures: 1}, pass, StateHealthy, ReasonNone, 1, 0, true},
		{"healthy fails once: still healthy, not a change", healthy, code503, StateHealthy, ReasonNone, 0, 1, false},
		{"healthy fails twice (503): unhealthy, code mismatch", Health{State: StateHealthy, Failures: 1}, code503, StateUnhealthy, ReasonResponseCodeMismatch, 0, 2, true},
		{"healthy times out twice: unhealthy, timeout", Health{State: StateHealthy, Failures: 1}, timeout, StateUnhealthy, ReasonTimeout, 0, 2, true},
		{"healthy refused twice: unhealthy, failed health checks", Health{State: StateHealthy, Failures: 1}, refused, StateUnhealthy, ReasonFailedHealthChecks, 0, 2, true},
		{"healthy check cannot run twice: unhealthy, internal error", Health{State: StateHealthy, Failures: 1}, internal, StateUnhealthy, ReasonInternalError, 0, 2, true},
		{"a pass resets the failure count", Health{State: StateHealthy, Failures: 1}, pass, StateHealthy, ReasonNone, 1, 0, false},
		{"unhealthy passes once of three: still unhealthy", unhealthy(ReasonResponseCodeMismatch, 2, 0), pass, StateUnhealthy, ReasonResponseCodeMismatch, 1, 0, false},
		{"unhealthy passes the healthy threshold: healthy", unhealthy(ReasonResponseCodeMismatch, 0, 2), pass, StateHealthy, ReasonNone, 3, 0, true},
		{"unhealthy fails differently: reason follows the latest failure", unhealthy(ReasonResponseCodeMismatch, 3, 0), timeout, StateUnhealthy, ReasonTimeout, 0, 4, true},
		{"unhealthy fails the same way: no change", unhealthy(ReasonTimeout, 3, 0), timeout, StateUnhealthy, ReasonTimeout, 0, 4, false},
		{"a failure resets the pass count of an unhealthy target", unhealthy(ReasonTimeout, 0, 2), timeout, StateUnhealthy, ReasonTimeout, 0, 1, false},
		{"deregister healthy: draining", healthy, Event{Kind: EventDeregister}, StateDraining, ReasonDeregistrationInProgress, 0, 0, true},
		{"deregister initial: draining", NewHealth(), Event{Kind: EventDeregister}, StateDraining, ReasonDeregistrationInProgress, 0, 0, true},
		{"deregister unhealthy: draining", unhealthy(ReasonTimeout, 2, 0), Event{Kind: EventDeregister}, StateDraining, ReasonDeregistrationInProgress, 0, 0, true},
		{"deregister draining: no change", draining, Event{Kind: EventDeregister}, StateDraining, ReasonDeregistrationInProgress, 0, 0, false},
		{"checks are ignored while draining", draining, code503, StateDraining, ReasonDeregistrationInProgress, 0, 0, false},
		{"drained: unused, not registered", draining, Event{Kind: EventDrained}, StateUnused, ReasonNotRegistered, 0, 0, true},
		{"drained while registered: no change", healthy, Event{Kind: EventDrained}, StateHealthy, ReasonNone, 0, 0, false},
		{"register a draining target: initial again", draining, Event{Kind: EventRegister}, StateInitial, ReasonRegistrationInProgress, 0, 0, true},
		{"register an unused target: initial", unused, Event{Kind: EventRegister}, StateInitial, ReasonRegistrationInProgress, 0, 0, true},
		{"register a healthy target: no change", healthy, Event{Kind: EventRegister}, StateHealthy, ReasonNone, 0, 0, false},
		{"checks are ignored when unused", unused, pass, StateUnused, ReasonNotRegistered, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := Next(tt.from, tt.ev, th)
			if got.State != tt.wantState || got.Reason != tt.wantReason {
				t.Errorf("state = %s/%q, want %s/%q", got.State, got.Reason, tt.wantState, tt.wantReason)
			}
			if got.Passes != tt.wantPasses || got.Failures != tt.wantFails {
				t.Errorf("passes/failures = %d/%d, want %d/%d", got.Passes, got.Failures, tt.wantPasses, tt.wantFails)
			}
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if got.Reason != ReasonNone && got.Description == "" {
				t.Errorf("reason %q has no description", got.Reason)
			}
		})
	}
}

func TestNext_DescriptionNamesTheCode(t *testing.T) {
	h, _ := Next(Health{State: StateHealthy, Failures: 1},
		Event{Kind: EventCheck, Check: CheckResult{Outcome: CheckCodeMismatch, Status: 502}}, Thresholds{Healthy: 2, Unhealthy: 2})
	if want := "Health checks failed with these codes: [502]"; h.Description != want {
		t.Errorf("description = %q, want %q", h.Description, want)
	}
}

func TestState_JSON(t *testing.T) {
	for s := StateInitial; s <= StateUnused; s++ {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal %d: %v", s, err)
		}
		var back State
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Errorf("round trip of %s via %s = %v, %v", s, b, back, err)
		}
	}
	var s State
	if err := json.Unmarshal([]byte(`"gone"`), &s); err == nil {
		t.Error("unknown state name decoded without error")
	}
	if _, err := json.Marshal(State(9)); err == nil {
		t.Error("unknown state value encoded without error")
	}
}

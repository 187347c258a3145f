package watchdog

import "time"

// Status is the watchdog's view of the host, for the agent's /v1/status.
type Status struct {
	// Enabled is true while the loop runs (between Start and Close).
	Enabled bool `json:"enabled"`
	// Interval is W.
	Interval time.Duration `json:"interval"`
	// FailuresBeforeHeal is K.
	FailuresBeforeHeal int `json:"failures_before_heal"`
	// Maintenance is the active maintenance window; nil when healing is not
	// paused.
	Maintenance *Maintenance `json:"maintenance,omitempty"`
	// LastRound is when the last round began; zero before the first.
	LastRound time.Time `json:"last_round,omitzero"`
	// LastResult is a one-line account of the last round (Round.Summary).
	LastResult string `json:"last_result,omitempty"`
	// Services is one entry per service of the definition the last round
	// read, in its order.
	Services []ServiceStatus `json:"services,omitempty"`
}

// ServiceStatus is the watchdog's record of one service.
type ServiceStatus struct {
	// Name is the service.
	Name string `json:"name"`
	// State is ok, starting, restarting, failing, drifted, healing,
	// crash-looping or unknown.
	State ServiceState `json:"state"`
	// Reason says why, for a person; "" when ok.
	Reason string `json:"reason,omitempty"`
	// Since is when State last changed.
	Since time.Time `json:"since,omitzero"`
	// Strikes is the consecutive failed checks so far; a heal comes at Of.
	Strikes int `json:"strikes"`
	// Of is K.
	Of int `json:"of"`
	// Heals is how many times the watchdog healed the current spec.
	Heals int `json:"heals"`
	// HealsInRow is the heals since it last stayed up.
	HealsInRow int `json:"heals_in_row,omitempty"`
	// LastHeal is when it was last healed; zero if never.
	LastHeal time.Time `json:"last_heal,omitzero"`
	// NextHeal is the earliest next heal while a backoff holds it back; zero
	// otherwise.
	NextHeal time.Time `json:"next_heal,omitzero"`
}

// Status returns the watchdog's state now.
func (w *Watchdog) Status() Status {
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	st := Status{
		Enabled:            w.running,
		Interval:           w.policy.Interval,
		FailuresBeforeHeal: w.policy.FailuresBeforeHeal,
		LastRound:          w.last.At,
		LastResult:         w.last.Summary(),
	}
	if w.last.At.IsZero() {
		st.LastResult = ""
	}
	if w.maint.Active(now) {
		m := *w.maint
		st.Maintenance = &m
	}
	for _, name := range w.order {
		rec := w.records[name]
		ss := ServiceStatus{
			Name: name, State: rec.State, Reason: rec.Reason, Since: rec.Since,
			Strikes: rec.Strikes, Of: w.policy.FailuresBeforeHeal,
			Heals: rec.Heals, HealsInRow: rec.HealsInRow, LastHeal: rec.LastHeal,
		}
		if rec.HealsInRow > 0 && rec.NextHeal.After(now) {
			ss.NextHeal = rec.NextHeal
		}
		st.Services = append(st.Services, ss)
	}
	return st
}

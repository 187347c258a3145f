package agent

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/watchdog"
)

// ErrNoWatchdog: the agent runs without a watchdog, so there is no healing
// to pause (HTTP 404).
var ErrNoWatchdog = errors.New("this agent runs no watchdog (started without one)")

// SetMaintenance pauses the watchdog's healing for d, with a reason and who
// asked; the window survives an agent restart and ends by itself. Errors:
// ErrNoWatchdog; watchdog.ErrInvalid for a bad d or reason (nothing
// changed).
func (a *Agent) SetMaintenance(d time.Duration, reason, by string) (watchdog.Maintenance, error) {
	if a.watchdog == nil {
		return watchdog.Maintenance{}, ErrNoWatchdog
	}
	return a.watchdog.SetMaintenance(d, reason, by)
}

// EndMaintenance ends maintenance now and returns the window it ended (nil
// when none was on). ErrNoWatchdog without a watchdog.
func (a *Agent) EndMaintenance(by string) (*watchdog.Maintenance, error) {
	if a.watchdog == nil {
		return nil, ErrNoWatchdog
	}
	return a.watchdog.EndMaintenance(by)
}

func (a *Agent) handleMaintenanceGet(w http.ResponseWriter, _ *http.Request) {
	if a.watchdog == nil {
		writeErr(w, ErrNoWatchdog)
		return
	}
	respond(w, agentapi.MaintenanceReport{Maintenance: wireMaintenance(a.watchdog.Maintenance())}, nil)
}

func (a *Agent) handleMaintenanceOn(w http.ResponseWriter, r *http.Request) {
	var req agentapi.MaintenanceRequest
	if err := decodeBody(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	d, err := time.ParseDuration(req.For)
	if err != nil {
		writeErr(w, fmt.Errorf("%w: maintenance for %q: give a Go duration like 30m", watchdog.ErrInvalid, req.For))
		return
	}
	m, err := a.SetMaintenance(d, req.Reason, req.By)
	a.metrics.op("maintenance-on", err)
	if err != nil {
		writeErr(w, err)
		return
	}
	respond(w, agentapi.MaintenanceReport{Maintenance: wireMaintenance(&m)}, nil)
}

func (a *Agent) handleMaintenanceOff(w http.ResponseWriter, r *http.Request) {
	ended, err := a.EndMaintenance(r.URL.Query().Get("by"))
	a.metrics.op("maintenance-off", err)
	if err != nil {
		writeErr(w, err)
		return
	}
	respond(w, agentapi.MaintenanceReport{Ended: wireMaintenance(ended)}, nil)
}

func wireMaintenance(m *watchdog.Maintenance) *agentapi.Maintenance {
	if m == nil {
		return nil
	}
	return &agentapi.Maintenance{Reason: m.Reason, Until: m.Until, By: m.By, Since: m.Since}
}

func wireWatchdog(s watchdog.Status) agentapi.WatchdogStatus {
	out := agentapi.WatchdogStatus{
		Enabled: s.Enabled, Maintenance: wireMaintenance(s.Maintenance),
		Interval: s.Interval.String(), FailuresBeforeHeal: s.FailuresBeforeHeal,
		LastRound: timePtr(s.LastRound), LastResult: s.LastResult,
	}
	for _, ss := range s.Services {
		out.Services = append(out.Services, agentapi.WatchedService{
			Name: ss.Name, Strikes: ss.Strikes, Of: ss.Of, State: string(ss.State), Reason: ss.Reason,
			Since: timePtr(ss.Since), Heals: ss.Heals, LastHeal: timePtr(ss.LastHeal), NextHeal: timePtr(ss.NextHeal),
		})
	}
	return out
}

// timePtr is nil for the zero time.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

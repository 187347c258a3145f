package agent

import (
	"context"
	"net/http"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/hostlock"
	"github.com/mythex/mythex/internal/runtime"
)

// Status reports the host: its definitions, what the runtime runs, who holds
// the host lock and the leases.
func (a *Agent) Status(ctx context.Context) (agentapi.Status, error) {
	st := agentapi.Status{Host: a.cfg.Host, Runtime: a.cfg.RuntimeName}
	refs := []struct {
		ref definition.Ref
		dst **agentapi.DefinitionRef
	}{
		{definition.RefCurrent, &st.Definitions.Current},
		{definition.RefPrevious, &st.Definitions.Previous},
		{definition.RefLastGood, &st.Definitions.LastGood},
	}
	for _, r := range refs {
		d, err := a.store.Get(r.ref)
		if err != nil {
			continue
		}
		*r.dst = &agentapi.DefinitionRef{Version: d.Version, Hash: d.Hash}
	}
	sts, err := a.rt.Status(ctx)
	if err != nil {
		return st, err
	}
	for _, s := range sts {
		st.Services = append(st.Services, wireService(s))
	}
	st.LockHolder = hostlock.Holder(a.cfg.StateDir)
	if l, ok := a.hostLease.currentRecord(); ok {
		wl := wireLeaseRecord(l)
		st.Lease = &wl
	}
	if l, ok := a.fleetLease.currentRecord(); ok {
		wl := wireLeaseRecord(l)
		st.FleetLease = &wl
	}
	rs := a.restoreStatus(ctx)
	st.Restore = &rs
	st.Recovery = a.recovery()
	if a.watchdog != nil {
		ws := wireWatchdog(a.watchdog.Status())
		st.Watchdog = &ws
	}
	return st, nil
}

func wireService(s runtime.ServiceStatus) agentapi.ServiceStatus {
	out := agentapi.ServiceStatus{
		Name: s.Name, Version: s.Version, SpecHash: s.SpecHash, Running: s.Running(),
		ID: s.ID, RestartCount: s.RestartCount, Health: string(s.Health.Status),
	}
	if out.Health == "" || out.Health == string(runtime.HealthNone) {
		out.Health = agentapi.HealthUnknown
	}
	if !s.StartedAt.IsZero() {
		t := s.StartedAt
		out.StartedAt = &t
	}
	if !s.FinishedAt.IsZero() {
		t := s.FinishedAt
		out.FinishedAt = &t
	}
	if !s.Running() && !s.FinishedAt.IsZero() {
		c := s.ExitCode
		out.ExitCode = &c
	}
	if n := len(s.Health.Log); n > 0 && !s.Health.Log[n-1].OK {
		out.HealthDetail = s.Health.Log[n-1].Output
	}
	if s.Detail != "" {
		out.HealthDetail = s.Detail
	}
	return out
}

func (a *Agent) handleStatus(w http.ResponseWriter, r *http.Request) {
	st, err := a.Status(r.Context())
	respond(w, st, err)
}

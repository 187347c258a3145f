package haproxy

import (
	"fmt"
	"strings"

	"github.com/mythex/mythex/internal/lbport"
)

// targetOf maps what HAProxy reports of one server onto an ALB target: the
// admin state from `show servers state` first (set by mythex or an operator),
// then the operational status of `show stat`.
//
//	admin maint, sessions left     → draining  Target.DeregistrationInProgress
//	admin maint, none left         → unused    Target.NotRegistered
//	admin drain (any status)       → draining  Target.DeregistrationInProgress
//	NOLB (weight 0, agent drain)   → draining  Target.DeregistrationInProgress
//	no check                       → unavailable Target.HealthCheckDisabled (HAProxy routes to it)
//	UP, UP n/m (failing, not yet DOWN) → healthy
//	DOWN with check INI or none yet → initial  Elb.RegistrationInProgress
//	DOWN n/m (passing, not yet UP) → initial   Elb.InitialHealthChecking
//	DOWN, check L7STS              → unhealthy Target.ResponseCodeMismatch
//	DOWN, check L4TOUT/L6TOUT/L7TOUT → unhealthy Target.Timeout
//	DOWN, any other check          → unhealthy Target.FailedHealthChecks
//
// InRotation is true for healthy and unavailable only: HAProxy does not fail
// open (with every server DOWN it answers 503 itself). InFlight is the
// server's current sessions plus its queue (scur + qcur). A server `show
// stat` does not list is unused, Target.NotRegistered.
func targetOf(ref lbport.TargetRef, stat *ServerStat, st *ServerState) lbport.Target {
	t := lbport.Target{ID: ref.ID, Address: ref.Address}
	if stat == nil {
		t.State, t.Reason = lbport.StateUnused, lbport.ReasonNotRegistered
		t.Description = "no such server in the backend"
		return t
	}
	if stat.Addr != "" {
		t.Address = stat.Addr
	}
	t.InFlight = stat.Scur + stat.Qcur
	var admin AdminState
	if st != nil {
		admin = st.Admin
	}
	status := strings.ToUpper(strings.TrimSpace(stat.Status))
	switch {
	case admin.Maint() || strings.HasPrefix(status, "MAINT"):
		if t.InFlight > 0 {
			t.State, t.Reason = lbport.StateDraining, lbport.ReasonDeregistrationInProgress
			t.Description = fmt.Sprintf("in maintenance, %d sessions still open", t.InFlight)
		} else {
			t.State, t.Reason = lbport.StateUnused, lbport.ReasonNotRegistered
			t.Description = "in maintenance (state maint)"
		}
	case admin.Drain() || strings.HasPrefix(status, "DRAIN"):
		t.State, t.Reason = lbport.StateDraining, lbport.ReasonDeregistrationInProgress
		t.Description = fmt.Sprintf("draining (state drain), check %s", orNone(stat.CheckStatus))
	case status == "NOLB":
		t.State, t.Reason = lbport.StateDraining, lbport.ReasonDeregistrationInProgress
		t.Description = "NOLB: up but takes no new traffic (weight 0 or drained by its agent)"
	case !stat.HasCheck():
		t.State, t.Reason, t.InRotation = lbport.StateUnavailable, lbport.ReasonHealthCheckDisabled, true
		t.Description = "no health check (`check` missing on the server line): HAProxy routes to it whenever it is ready"
	case strings.HasPrefix(status, "UP"):
		t.State, t.Reason, t.InRotation = lbport.StateHealthy, lbport.ReasonNone, true
		if status != "UP" {
			t.Description = fmt.Sprintf("%s: failing checks, not yet DOWN (check %s)", stat.Status, orNone(stat.CheckStatus))
		}
	case strings.HasPrefix(status, "DOWN"):
		check := strings.ToUpper(stat.CheckStatus)
		switch {
		case check == "" || check == "INI":
			t.State, t.Reason = lbport.StateInitial, lbport.ReasonRegistrationInProgress
			t.Description = "no check has finished yet"
		case status != "DOWN":
			t.State, t.Reason = lbport.StateInitial, lbport.ReasonInitialHealthChecking
			t.Description = fmt.Sprintf("%s: passing checks, not yet UP", stat.Status)
		default:
			t.State, t.Reason = lbport.StateUnhealthy, checkReason(check)
			t.Description = fmt.Sprintf("check %s", check)
			if stat.CheckDesc != "" {
				t.Description += ": " + stat.CheckDesc
			}
		}
	default:
		t.State, t.Reason = lbport.StateUnhealthy, lbport.ReasonInternalError
		t.Description = fmt.Sprintf("HAProxy status %q", stat.Status)
	}
	return t
}

// checkReason maps an HAProxy check status of a DOWN server to an ALB reason.
func checkReason(check string) lbport.Reason {
	switch check {
	case "L7STS":
		return lbport.ReasonResponseCodeMismatch
	case "L4TOUT", "L6TOUT", "L7TOUT":
		return lbport.ReasonTimeout
	}
	return lbport.ReasonFailedHealthChecks
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

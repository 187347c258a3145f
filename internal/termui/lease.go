package termui

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
)

// WriteLeases writes `mythex lease status` as a table: one line per lease
// of each host, its time left at now, and whether the host is restored.
func WriteLeases(out io.Writer, rows []agentapi.HostLeases, now time.Time) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tLEASE\tHOLDER\tLEFT\tRENEWED\tSTEP\tRESTORES TO\tHOST STATE")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t?\t-\t-\t-\t-\t-\tunreachable: %s\n", r.Host, r.Error)
			continue
		}
		state := "-"
		if r.Restore != nil {
			state = "restored (" + r.Restore.Version + ")"
			if !r.Restore.Restored {
				state = "NOT restored: " + r.Restore.Reason
			}
		}
		if r.Recovery != nil && r.Recovery.State == agentapi.RecoveryRunning {
			state = "recovering from the lease of " + r.Recovery.Holder
		}
		leases := 0
		for _, l := range []struct {
			kind string
			l    *agentapi.Lease
		}{{"host", r.Lease}, {"fleet", r.FleetLease}} {
			if l.l == nil {
				continue
			}
			leases++
			renewed := "-"
			if l.l.Renewed != nil {
				renewed = now.Sub(*l.l.Renewed).Round(100*time.Millisecond).String() + " ago"
			}
			restore := "-"
			if l.l.Restore != nil {
				restore = l.l.Restore.Version
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Host, l.kind, l.l.Holder,
				max(l.l.Expires.Sub(now), 0).Round(100*time.Millisecond), renewed, LeaseStep(*l.l), restore, state)
		}
		if leases == 0 {
			fmt.Fprintf(tw, "%s\tnone\t-\t-\t-\t-\t-\t%s\n", r.Host, state)
		}
	}
	_ = tw.Flush()
}

// LeaseStep is the deploy step a lease's holder last reported, with its
// state ("drain (running)"), or "-" before any.
func LeaseStep(l agentapi.Lease) string {
	if l.Step == "" {
		return "-"
	}
	return l.Step + " (" + l.StepState + ")"
}

// RecoveryDetail completes "recovery <state>" with what the agent's
// recovery after a lease did: the version it returned to, the re-registration,
// the error.
func RecoveryDetail(r agentapi.Recovery) string {
	s := ""
	if r.Version != "" {
		s += ": back on " + r.Version
	} else if r.State == agentapi.RecoveryRestored {
		s += ": the host ran nothing before that deploy; its new services were stopped"
	}
	if r.Registered {
		s += ", registered with the load balancer"
	}
	if r.Error != "" {
		s += ": " + r.Error
	}
	return s
}

// WriteJSON writes v as indented JSON: every --json answer that is one
// document.
func WriteJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

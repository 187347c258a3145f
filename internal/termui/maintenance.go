package termui

import (
	"fmt"
	"io"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
)

// WriteMaintenanceOn confirms `mythex agent maintenance on` for host name:
// until when healing is paused (for d), why, by whom, and endCmd, the
// command that ends it early.
func WriteMaintenanceOn(w io.Writer, name string, rep agentapi.MaintenanceReport, d time.Duration, endCmd string) {
	m := rep.Maintenance
	if m == nil {
		fmt.Fprintf(w, "%s: no maintenance; the watchdog heals\n", name)
		return
	}
	fmt.Fprintf(w, "%s: maintenance on until %s (%s): %s (by %s)\nthe watchdog reports but heals nothing until then; end it early with: %s\n",
		name, m.Until.Local().Format(time.RFC3339), d, m.Reason, dash(m.By), endCmd)
}

// WriteMaintenanceOff confirms `mythex agent maintenance off` for host name.
func WriteMaintenanceOff(w io.Writer, name string, rep agentapi.MaintenanceReport) {
	if rep.Ended == nil {
		fmt.Fprintf(w, "%s: no maintenance was on\n", name)
		return
	}
	fmt.Fprintf(w, "%s: maintenance off (was: %s, by %s); healing resumes\n", name, rep.Ended.Reason, dash(rep.Ended.By))
}

// WriteMaintenance writes `mythex agent maintenance status` for host name:
// the window in force and its time left at now, or none.
func WriteMaintenance(w io.Writer, name string, rep agentapi.MaintenanceReport, now time.Time) {
	m := rep.Maintenance
	if m == nil {
		fmt.Fprintf(w, "%s: no maintenance; the watchdog heals\n", name)
		return
	}
	fmt.Fprintf(w, "%s: maintenance on until %s (%s left): %s (by %s)\n",
		name, m.Until.Local().Format(time.RFC3339), m.Until.Sub(now).Round(time.Second), m.Reason, dash(m.By))
}

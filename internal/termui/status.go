package termui

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/fleetstatus"
)

// WriteStatus prints `mythex status`: a block per host (versions, services,
// the load balancer's view, lease, maintenance, problems) and the verdict.
func WriteStatus(w io.Writer, v fleetstatus.Verdict) {
	for _, h := range v.Hosts {
		mark := "ok  "
		if len(h.Problems) > 0 {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s %-10s current %s · previous %s · last good %s\n", mark, h.Host, dash(h.Current), dash(h.Previous), dash(h.LastGood))
		indent := "     " + strings.Repeat(" ", 11)
		var svcs []string
		for _, s := range h.Services {
			st := "down"
			if s.Running {
				st = "up " + (time.Duration(s.Uptime) * time.Second).String()
				if s.Health != "" && s.Health != "healthy" {
					st += " " + s.Health
				}
			}
			if s.LastExit != nil {
				st += fmt.Sprintf(", last exit %d", *s.LastExit)
			}
			svcs = append(svcs, s.Name+" "+st)
		}
		if len(svcs) > 0 {
			fmt.Fprintf(w, "%sservices: %s\n", indent, strings.Join(svcs, " · "))
		}
		if l := h.LB; l != nil {
			rot := "out of rotation"
			if l.InRotation {
				rot = "in rotation"
			}
			state := l.State
			if l.Reason != "" {
				state += " " + l.Reason
			}
			fmt.Fprintf(w, "%slb: %s, %s, %d in flight\n", indent, state, rot, l.InFlight)
		}
		if l := h.Lease; l != nil {
			fmt.Fprintf(w, "%slease: %s, expires in %s\n", indent, l.Holder, time.Duration(l.ExpiresIn*float64(time.Second)))
		}
		if m := h.Maintenance; m != nil {
			fmt.Fprintf(w, "%smaintenance until %s: %s\n", indent, m.Until.Format(time.RFC3339), m.Reason)
		}
		for _, p := range h.Problems {
			fmt.Fprintf(w, "%s! %s\n", indent, p)
		}
	}
	mark := "✓"
	if !v.OK {
		mark = "✗"
	}
	fmt.Fprintf(w, "%s %s\n", mark, v.Summary)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

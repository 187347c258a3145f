package termui

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/history"
)

// WriteHistory writes `mythex history`: one line per deploy (when, kind,
// result, versions, who, how long, id), one per host with its phase times,
// and why it failed.
func WriteHistory(w io.Writer, deploys []history.Deploy) {
	if len(deploys) == 0 {
		fmt.Fprintln(w, "no deploys recorded yet")
		return
	}
	for _, d := range deploys {
		from := strings.Join(d.From, "+")
		if from == "" {
			from = "(nothing)"
		}
		fmt.Fprintf(w, "%s  %-8s %-11s %s → %s  %s  (%s, %s)\n", d.Started.Local().Format("2006-01-02 15:04:05"), d.Kind, d.Result,
			from, d.To, d.Who, d.Ended.Sub(d.Started).Round(100*time.Millisecond), d.ID)
		for _, h := range d.Hosts {
			var ph []string
			for _, p := range h.Phases {
				ph = append(ph, fmt.Sprintf("%s %.2fs", p.Phase, p.Seconds))
			}
			fmt.Fprintf(w, "    %-10s %-11s %s\n", h.Host, h.HostResult, strings.Join(ph, " · "))
		}
		if d.Error != "" {
			fmt.Fprintf(w, "    why: %s\n", d.Error)
		}
	}
}

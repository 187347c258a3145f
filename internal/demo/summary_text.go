package demo

import (
	"fmt"
	"io"
	"strings"

	"github.com/mythex/mythex/internal/termui"
)

// WriteSummary writes `mythex demo`'s summary for people: per deploy its result,
// the prober's counts, the versions answering over time and each host's
// time against the bound; then the fault's verdict or the run's.
func WriteSummary(w io.Writer, s Summary) {
	for _, d := range s.Deploys {
		fmt.Fprintf(w, "\n%s → %s: ", d.From, d.Version)
		if d.OK {
			fmt.Fprintf(w, "deployed and verified in %.1fs\n", d.Seconds)
		} else {
			fmt.Fprintf(w, "FAILED: %s\n", d.Error)
		}
		p := d.Probe
		fmt.Fprintf(w, "  requests %d · reached nothing %d · drain signals %d · app errors %d · ok %d · p99 %.1fms\n",
			p.Requests, p.ReachedNothing, p.DrainSignals, p.AppErrors, p.OK, p.P99Millis)
		if d.LBCalls > 0 {
			fmt.Fprintf(w, "  ELBv2 API calls %d (%.1f per host)\n", d.LBCalls, float64(d.LBCalls)/float64(max(len(d.Hosts), 1)))
		}
		if len(p.Reasons) > 0 {
			var rs []string
			for _, r := range p.Reasons {
				rs = append(rs, fmt.Sprintf("%s ×%d", r.What, r.Count))
			}
			fmt.Fprintf(w, "  not ok: %s\n", strings.Join(rs, ", "))
		}
		if late := float64(p.LateSends) / float64(max(p.Requests, 1)); late > 0.05 || p.Unsent > 0 {
			fmt.Fprintf(w, "  (the prober fell behind: %.0f%% of sends late, %d not sent — the machine is busy; timeouts then say more about it than about the deploy)\n", 100*late, p.Unsent)
		}
		var vs []string
		for _, sp := range d.Versions {
			v := strings.Join(sp.Versions, "+")
			if v == "" {
				v = "nothing"
			}
			vs = append(vs, fmt.Sprintf("%d–%ds %s", sp.FromSecond, sp.ToSecond+1, v))
		}
		fmt.Fprintf(w, "  versions answering: %s\n", strings.Join(vs, " · "))
		fmt.Fprintf(w, "  %-8s %8s %8s %6s  %s\n", "host", "took", "bound", "ratio", "phases")
		for _, h := range d.Hosts {
			var ph []string
			for _, p := range h.Phases {
				ph = append(ph, fmt.Sprintf("%s %.2f", p.Phase, p.Seconds))
			}
			ratio := "-"
			if h.BoundSeconds > 0 {
				ratio = fmt.Sprintf("%.2f", h.Seconds/h.BoundSeconds)
			}
			fmt.Fprintf(w, "  %-8s %7.2fs %7.2fs %6s  %s\n", h.Host, h.Seconds, h.BoundSeconds, ratio, strings.Join(ph, " · "))
		}
	}
	if n := len(s.Deploys); n > 0 && s.Deploys[n-1].Bound.Total() > 0 {
		fmt.Fprintf(w, "  (bound: the least one host's deploy can take with these numbers, %.2fs — %s; ratio = took ÷ bound. The drain's serving period is spent inside stop.)\n",
			s.Deploys[n-1].Bound.Total().Seconds(), s.Deploys[n-1].Bound.Explain())
	}
	fmt.Fprintln(w)
	if fr := s.FaultReport; fr != nil {
		after := fr.FleetVersionAfter
		if after == "" {
			after = "not settled (" + fr.Unsettled + ")"
		}
		mark := "✓"
		if !fr.OK() {
			mark = "✗"
		}
		fmt.Fprintf(w, "%s fault %s: fleet after: %s (want %s) · rolled back %v · new version reached %s · reached nothing %d of %d requests, bound %d\n",
			mark, fr.Fault, after, fr.WantVersion, fr.RolledBack, orNone(fr.HostsReached), fr.ReachedNothing, s.Requests, fr.ReachedNothingBound)
		writeStatus(w, s)
		return
	}
	switch {
	case s.OK():
		fmt.Fprintf(w, "✓ %d requests during %d deploy(s), zero reached nothing\n", s.Requests, len(s.Deploys))
	case s.ReachedNothing > 0:
		fmt.Fprintf(w, "✗ %d of %d requests reached nothing", s.ReachedNothing, s.Requests)
		if s.Profile == ProfileBefore {
			fmt.Fprintf(w, " — the write-up's 502s: the server stopped listening before the LB stopped routing to it (mythex check -f examples/seed/before.yml says by how much)")
		}
		fmt.Fprintln(w)
	default:
		fmt.Fprintln(w, "✗ a deploy failed (see above); the fleet was rolled back and kept serving")
	}
	writeStatus(w, s)
}

// writeStatus ends the demo with what `mythex status` says of its fleet.
func writeStatus(w io.Writer, s Summary) {
	if s.Status == nil {
		return
	}
	fmt.Fprintln(w, "\nmythex status of the fleet:")
	termui.WriteStatus(w, *s.Status)
}

func orNone(hosts []string) string {
	if len(hosts) == 0 {
		return "no host"
	}
	return strings.Join(hosts, ", ")
}

package termui

import (
	"fmt"
	"io"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport/fleetlb"
)

// WriteDrift writes how the live load balancer lbc differs from mythex.yml,
// one field a line (file value, live value), or that it matches.
func WriteDrift(w io.Writer, lbc fleet.LoadBalancer, drift []fleetlb.Difference) {
	what := "the " + lbc.Kind + " load balancer"
	if lbc.TargetGroupARN != "" {
		what = "target group " + lbc.TargetGroupARN
	}
	if len(drift) == 0 {
		fmt.Fprintf(w, "live: %s matches mythex.yml\n\n", what)
		return
	}
	fmt.Fprintf(w, "live: %s differs from mythex.yml in %d field(s):\n", what, len(drift))
	width := 0
	for _, d := range drift {
		width = max(width, len(d.Field))
	}
	for _, d := range drift {
		fmt.Fprintf(w, "  %-*s  file %-8s live %s\n", width, d.Field, d.File, d.Live)
	}
	fmt.Fprintln(w, "  (mythex lb apply -f FILE sets the file's numbers; the check below is on the live ones)")
	fmt.Fprintln(w)
}

package termui

import (
	"encoding/json"
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

// LiveCheckJSON is the shape of `mythex check --live --json`.
type LiveCheckJSON struct {
	File  string               `json:"file"`
	Kind  string               `json:"kind"`
	OK    bool                 `json:"ok"`
	Drift []fleetlb.Difference `json:"drift"`
	// Check is `mythex check --json` on the live numbers.
	Check json.RawMessage `json:"check"`
}

// MarshalJSON writes Drift as [] when there is none.
func (l LiveCheckJSON) MarshalJSON() ([]byte, error) {
	type plain LiveCheckJSON
	if l.Drift == nil {
		l.Drift = []fleetlb.Difference{}
	}
	return json.Marshal(plain(l))
}

// LBApplyJSON is the shape of `mythex lb apply --json`.
type LBApplyJSON struct {
	File    string               `json:"file"`
	DryRun  bool                 `json:"dry_run"`
	Applied bool                 `json:"applied"`
	Changes []fleetlb.Difference `json:"changes"`
}

// MarshalJSON writes Changes as [] when there are none.
func (a LBApplyJSON) MarshalJSON() ([]byte, error) {
	type plain LBApplyJSON
	if a.Changes == nil {
		a.Changes = []fleetlb.Difference{}
	}
	return json.Marshal(plain(a))
}

// WriteLBApply writes `mythex lb apply` of file: the fields changed (or
// that would change, with dryRun), live → file, or that nothing had to.
func WriteLBApply(w io.Writer, file string, changes []fleetlb.Difference, dryRun bool) {
	switch {
	case len(changes) == 0:
		fmt.Fprintf(w, "the live target group already matches %s: nothing to change\n", file)
		return
	case dryRun:
		fmt.Fprintf(w, "would change %d field(s) (--dry-run: nothing changed):\n", len(changes))
	default:
		fmt.Fprintf(w, "changed %d field(s):\n", len(changes))
	}
	for _, c := range changes {
		fmt.Fprintf(w, "  %s: %s → %s\n", c.Field, c.Live, c.File)
	}
}

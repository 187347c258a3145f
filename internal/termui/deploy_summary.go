package termui

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/mythex/mythex/internal/deploy"
)

// WriteDeploySummary writes the end of a `mythex deploy`: each host's result
// and time against the analytic lower bound, then the deploy's outcome (err
// is the deploy's error).
func WriteDeploySummary(w io.Writer, res deploy.Result, err error) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-10s %-8s %9s %9s %6s  %s\n", "host", "result", "took", "bound", "ratio", "phases")
	for _, h := range res.Hosts {
		result := "ok"
		switch {
		case h.RolledBack:
			result = "rollback"
		case !h.OK:
			result = "FAILED"
		}
		var ph []string
		for _, p := range h.Phases {
			ph = append(ph, fmt.Sprintf("%s %.2fs", p.Phase, p.Seconds))
		}
		ratio := "-"
		if h.BoundSeconds > 0 {
			ratio = fmt.Sprintf("%.2f", h.Seconds/h.BoundSeconds)
		}
		fmt.Fprintf(w, "%-10s %-8s %8.2fs %8.2fs %6s  %s\n", h.Host, result, h.Seconds, h.BoundSeconds, ratio, strings.Join(ph, ", "))
	}
	b := res.Bound
	fmt.Fprintf(w, "bound per host = drain %.2fs + stop %.2fs + start %.2fs + healthy %.2fs + verify %.2fs: the least any deploy of these numbers can take (%s)\n",
		b.Drain.Seconds(), b.Stop.Seconds(), b.Start.Seconds(), b.Healthy.Seconds(), b.Verify.Seconds(), b.Explain())
	if err == nil {
		fmt.Fprintf(w, "deployed %s to %d hosts in %.2fs, verified on every host\n", res.Version, len(res.Hosts), res.Seconds)
	} else if len(res.RolledBack) > 0 {
		fmt.Fprintf(w, "deploy of %s failed; the fleet was rolled back: %s\n", res.Version, strings.Join(res.RolledBack, ", "))
	}
}

// DropWriter writes to W until a write fails (a closed pipe), then drops
// everything: losing the reader must not stop a deploy halfway.
type DropWriter struct {
	W      io.Writer
	mu     sync.Mutex
	broken bool
}

// Write writes p to W until a write fails; it never returns an error.
func (d *DropWriter) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.broken {
		return len(p), nil
	}
	if _, err := d.W.Write(p); err != nil {
		d.broken = true
	}
	return len(p), nil
}

// Unwrap returns the writer behind a DropWriter, or w itself: for the
// terminal check of the real output.
func Unwrap(w io.Writer) io.Writer {
	if d, ok := w.(*DropWriter); ok {
		return d.W
	}
	return w
}

package termui

import (
	"fmt"
	"io"

	"github.com/mythex/mythex/internal/lbport/haproxy/deploylb"
)

// WriteHAProxyLive writes `mythex check --live` on a kind haproxy fleet: the
// HAProxy read and backend, then one line per finding (✓ ok, ! warn, ✗ fail).
func WriteHAProxyLive(w io.Writer, rep deploylb.LiveReport, backend string) {
	fmt.Fprintf(w, "\nlive: HAProxy %s at %s, backend %s\n", rep.Version, rep.Live, backend)
	for _, f := range rep.Findings {
		m := map[string]string{"ok": "✓", "warn": "!", "fail": "✗"}[f.Level]
		fmt.Fprintf(w, "  %s %-14s %s\n", m, f.Name, f.Detail)
	}
}

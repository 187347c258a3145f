package termui

import (
	"fmt"
	"io"

	"github.com/mythex/mythex/internal/agent"
)

// WriteBootstrap writes a successful `mythex agent bootstrap`: nothing to
// start, a half-deployed host left to the agent, or each service healthy and
// after how long.
func WriteBootstrap(w io.Writer, res agent.BootstrapResult) {
	switch {
	case res.NothingPublished:
		fmt.Fprintf(w, "%s: nothing published to this host yet; nothing to start\n", res.Host)
	case res.HalfDeployed:
		fmt.Fprintf(w, "%s: %s\n", res.Host, res.Error)
	default:
		for _, s := range res.Services {
			fmt.Fprintf(w, "  %-16s healthy after %.1fs\n", s.Name, s.Seconds)
		}
		fmt.Fprintf(w, "%s runs %s: %d services, every one answering its health check\n", res.Host, res.Version, len(res.Services))
	}
}

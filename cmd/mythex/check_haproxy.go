package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport/haproxy/deploylb"
	"github.com/mythex/mythex/internal/termui"
)

// checkLive reads the running HAProxy of a kind haproxy fleet through its
// Runtime API (and haproxy.cfg at load_balancer.config_file, if set) and
// reports what the timing proof cannot see from mythex.yml alone: servers
// without a health check, and drift between the health check mythex.yml
// describes and the one HAProxy runs. It changes nothing. The error is for
// a HAProxy that cannot be read (socket, level, backend, server): exit 2.
func checkLive(ctx context.Context, w io.Writer, l *fleet.Loaded, asJSON bool) (ok bool, err error) {
	if l.LoadBalancer.Kind != fleet.KindHAProxy {
		return false, usagef("--live reads a running HAProxy: load_balancer.kind is %q, not haproxy", l.LoadBalancer.Kind)
	}
	out, err := deploylb.CheckLive(ctx, l)
	if err != nil {
		return false, err
	}
	if asJSON {
		b, _ := json.Marshal(out)
		_, err = fmt.Fprintf(w, "%s\n", b)
		return out.OK, err
	}
	termui.WriteHAProxyLive(w, out, l.LoadBalancer.Backend)
	return out.OK, nil
}

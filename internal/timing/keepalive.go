package timing

import (
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// KeepAliveMarginal is the least gap between the backend's keep-alive idle
// timeout and the LB's idle timeout that keep-alive calls a pass; a smaller
// positive gap is marginal. The two timers start at different moments on each
// side of the connection, so a gap of a few seconds still loses the race
// now and then (operators' rule of thumb: backend ≥ LB + 5–15 s).
const KeepAliveMarginal = 10 * time.Second

// keepAliveInvariant: no keep-alive race. The backend must keep idle
// connections open longer than the LB does (Bidle > Lidle), or the LB sends a
// request on a connection the backend is closing (502). When
// backend.longest_request is set it must also stay under the LB's idle
// timeout, or the LB gives up on the silent connection (504).
var keepAliveInvariant = invariant{
	name: "keep-alive",
	inputs: []string{
		"backend.keepalive_idle_timeout",
		"load_balancer.idle_timeout",
		"backend.longest_request",
	},
	eval: evalKeepAlive,
}

func evalKeepAlive(c *fleet.Config) []clause {
	b, l := c.Backend.KeepAliveIdleTimeout, c.LoadBalancer.IdleTimeout
	ka := atLeast(b, l, true, func() string {
		return fmt.Sprintf("keepalive_idle_timeout %s > idle_timeout %s", fmtDur(b), fmtDur(l))
	}).because(func() string {
		return "the backend closes idle connections the LB still counts as open: a request sent on one as it closes gets a 502"
	})
	out := []clause{ka.marginalIf(b-l < KeepAliveMarginal, func() string {
		return fmt.Sprintf("only %s apart; the timers start at different moments on each side, so keep at least %s between them", fmtDur(b-l), fmtDur(KeepAliveMarginal))
	})}
	if lr := c.Backend.LongestRequest; lr > 0 {
		out = append(out, atMost(lr, l, true, func() string {
			return fmt.Sprintf("longest_request %s < idle_timeout %s", fmtDur(lr), fmtDur(l))
		}).because(func() string {
			return "the LB closes a connection that sent nothing for its idle timeout: a request that slow gets a 504"
		}))
	}
	return out
}

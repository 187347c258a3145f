package timing

import (
	"fmt"

	"github.com/mythex/mythex/internal/fleet"
)

// capacityInvariant: while a batch drains, at least one host stays in
// rotation: hosts − batch_size ≥ 1. Otherwise the load balancer has no target
// at all for the length of a batch and every request reaches nothing (503 no
// targets), however good every timing is. With no hosts listed there is
// nothing to judge: it passes as "not judged" (an orchestrator's replicas are
// not hosts, and a marginal verdict on every such config would be noise).
var capacityInvariant = invariant{
	name:   "capacity",
	inputs: []string{"deploy.batch_size"},
	eval:   evalCapacity,
}

func evalCapacity(c *fleet.Config) []clause {
	n, b := len(c.Hosts), c.Deploy.BatchSize
	cl := clause{text: func() string {
		return fmt.Sprintf("hosts %d − batch_size %d = %d host(s) serving while a batch drains, ≥ 1", n, b, n-b)
	}}
	switch {
	case n == 0:
		cl.text = func() string {
			return "no hosts listed: capacity during a deploy is not judged (list the hosts to have it checked)"
		}
	case n == 1:
		cl.level = Fail
		cl.why = func() string {
			return "a rolling deploy of a single host takes the only target out of rotation: every request reaches nothing until it is back; add a second host"
		}
	case n-b < 1:
		cl.level = Fail
		cl.why = func() string {
			return fmt.Sprintf("each batch takes every host out of rotation at once: every request reaches nothing (no targets) for the whole batch; set deploy.batch_size to at most %d", n-1)
		}
	}
	return []clause{cl}
}

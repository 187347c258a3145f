package timing

import (
	"fmt"

	"github.com/mythex/mythex/internal/fleet"
)

// capacityInvariant: while a batch drains, enough hosts stay in rotation:
// hosts − batch_size ≥ deploy.min_in_service (default 1; a percentage of the
// hosts, rounded up). Otherwise the load balancer has too few targets — or
// none, and every request reaches nothing (503 no targets) — for the length
// of a batch, however good every timing is. The arithmetic is
// fleet.Deploy.InService and fleet.CapacityHolds, the same the deploy's live
// check uses against the LB's own report. With no hosts listed there is
// nothing to judge: it passes as "not judged" (an orchestrator's replicas are
// not hosts, and a marginal verdict on every such config would be noise).
var capacityInvariant = invariant{
	name:   "capacity",
	inputs: []string{"deploy.batch_size"},
	eval:   evalCapacity,
}

func evalCapacity(c *fleet.Config) []clause {
	n, b := len(c.Hosts), c.Deploy.BatchSize
	req, err := c.Deploy.InService(n)
	if err != nil {
		req = 1 // Validate reports the bad value; judge by the default
	}
	cl := clause{text: func() string {
		return fmt.Sprintf("hosts %d − batch_size %d = %d host(s) serving while a batch drains, ≥ min_in_service %d", n, b, n-b, req)
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
	case !fleet.CapacityHolds(n-b, req):
		cl.level = Fail
		cl.why = func() string {
			if n-b < 1 {
				return fmt.Sprintf("each batch takes every host out of rotation at once: every request reaches nothing (no targets) for the whole batch; set deploy.batch_size to at most %d", n-1)
			}
			return fmt.Sprintf("a batch of %d leaves %d host(s) serving, fewer than deploy.min_in_service %d: the deploy would refuse every batch; set deploy.batch_size to at most %d or lower min_in_service", b, n-b, req, max(n-req, 0))
		}
	}
	return []clause{cl}
}

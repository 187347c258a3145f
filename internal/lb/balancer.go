package lb

import (
	"fmt"
	"sync/atomic"
)

// Algorithm is how the load balancer picks a target among those in rotation,
// as an ALB target group's load_balancing.algorithm.type.
type Algorithm uint8

// Routing algorithms.
const (
	// RoundRobin takes the targets in rotation in turn (ALB's default).
	RoundRobin Algorithm = iota
	// LeastOutstandingRequests takes the target with the fewest requests in
	// flight; ties go round robin.
	LeastOutstandingRequests
)

// String returns the ALB name: round_robin or least_outstanding_requests.
func (a Algorithm) String() string {
	switch a {
	case RoundRobin:
		return "round_robin"
	case LeastOutstandingRequests:
		return "least_outstanding_requests"
	}
	return fmt.Sprintf("Algorithm(%d)", a)
}

// ParseAlgorithm parses an ALB algorithm name; anything else is an error
// listing the names.
func ParseAlgorithm(s string) (Algorithm, error) {
	switch s {
	case "round_robin":
		return RoundRobin, nil
	case "least_outstanding_requests":
		return LeastOutstandingRequests, nil
	}
	return 0, fmt.Errorf("unknown algorithm %q; use round_robin or least_outstanding_requests", s)
}

// rotationOf decides which targets take new requests, from their states (one
// per target, in registration order). It returns the indexes of those in
// rotation: the healthy ones; when none is healthy but some are registered
// (initial or unhealthy), all of those — the ALB fails open ("if the load
// balancer doesn't have enough healthy targets, it automatically sends traffic
// to all registered targets"). Draining and unused targets never are. Pure.
func rotationOf(states []State) (in []int, failOpen bool) {
	for i, s := range states {
		if s == StateHealthy {
			in = append(in, i)
		}
	}
	if len(in) > 0 {
		return in, false
	}
	for i, s := range states {
		if s == StateInitial || s == StateUnhealthy {
			in = append(in, i)
		}
	}
	return in, len(in) > 0
}

// rotation is an immutable set of targets in rotation, replaced whole when a
// state changes so that picking takes no lock.
type rotation struct {
	targets  []*Target
	failOpen bool
}

// balancer picks a target from the current rotation.
type balancer struct {
	// algo holds an Algorithm; ModifyTargetGroupAttributes may change it live.
	algo atomic.Uint32
	cur  atomic.Pointer[rotation]
	next atomic.Uint64
}

func newBalancer(algo Algorithm) *balancer {
	b := &balancer{}
	b.algo.Store(uint32(algo))
	b.cur.Store(&rotation{})
	return b
}

// pick returns a target in rotation, or nil when none is. It allocates
// nothing and takes no lock.
func (b *balancer) pick() *Target {
	ts := b.cur.Load().targets
	n := uint64(len(ts))
	switch n {
	case 0:
		return nil
	case 1:
		return ts[0]
	}
	start := b.next.Add(1) - 1
	if Algorithm(b.algo.Load()) == RoundRobin {
		return ts[start%n]
	}
	best := ts[start%n]
	bestN := best.inFlight.Load()
	for i := uint64(1); i < n && bestN > 0; i++ {
		t := ts[(start+i)%n]
		if v := t.inFlight.Load(); v < bestN {
			best, bestN = t, v
		}
	}
	return best
}

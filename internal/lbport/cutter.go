package lbport

import "context"

// SessionCutter is implemented by drivers of load balancers that keep no
// deregistration timer of their own (HAProxy: a server in drain keeps its
// sessions as long as they last). The deployer enforces the target group's
// deregistration delay for them: when a deregistered target still has
// requests in flight at the bound, it calls CutSessions and says so in the
// deploy's output. Drivers of load balancers that end draining themselves
// (an ALB, the embedded LB) do not implement it.
type SessionCutter interface {
	// CutSessions closes every connection the load balancer still has to the
	// target (HAProxy: `shutdown sessions server B/S`); the requests on them
	// fail. An unknown target is an error wrapping ErrInvalidTarget.
	CutSessions(ctx context.Context, t TargetRef) error
}

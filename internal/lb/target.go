package lb

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/lbport"
)

// lastChecksKept is how many recent health check results a target keeps for
// its status.
const lastChecksKept = 5

// Target is one registered backend of the target group: its address, its
// connection pool, its in-flight count and its health. The fields the proxy
// touches per request are atomics; the rest is guarded by the group's mutex.
type Target struct {
	id      string
	address string
	client  *fasthttp.HostClient
	conns   *connSet

	// inFlight counts requests routed to the target and not yet answered.
	inFlight atomic.Int64
	// requests counts requests routed to the target since it was registered.
	requests atomic.Uint64
	// admitted is true while the target is registered (initial, healthy,
	// unhealthy): it may take new requests when in rotation.
	admitted atomic.Bool
	// cut is set when the deregistration delay ran out with requests in flight;
	// their failures are reported as cut off, not as the target's fault.
	cut atomic.Bool
	// idle is signalled (never blocking) when in-flight drops to 0 while the
	// target is not admitted, so the drain can finish early.
	idle chan struct{}

	// Guarded by TargetGroup.mu.
	health     Health
	gen        uint64 // bumped at each registration; stale checks are dropped
	checks     [lastChecksKept]CheckResult
	nChecks    int
	inRotation bool
	stopChecks context.CancelFunc
	stopDrain  context.CancelFunc
}

// ID is the target's id (the fleet host's name).
func (t *Target) ID() string { return t.id }

// Address is the target's host:port.
func (t *Target) Address() string { return t.address }

// release ends one request routed to t.
func (t *Target) release() {
	if t.inFlight.Add(-1) == 0 && !t.admitted.Load() {
		select {
		case t.idle <- struct{}{}:
		default:
		}
	}
}

// addCheck keeps r among the last checks. Caller holds the group's mutex.
func (t *Target) addCheck(r CheckResult) {
	t.checks[t.nChecks%lastChecksKept] = r
	t.nChecks++
}

// status snapshots t. Caller holds the group's mutex.
func (t *Target) status() TargetStatus {
	s := TargetStatus{
		ID: t.id, Address: t.address,
		State: t.health.State, Reason: t.health.Reason, Description: t.health.Description,
		InRotation: t.inRotation, InFlight: t.inFlight.Load(),
		LastChecks: make([]CheckStatus, 0, lastChecksKept),
	}
	n := min(t.nChecks, lastChecksKept)
	for i := range n { // newest first
		r := t.checks[(t.nChecks-1-i)%lastChecksKept]
		s.LastChecks = append(s.LastChecks, CheckStatus{
			At: r.At, OK: r.Passed(), Status: r.Status, DurationSeconds: r.Duration.Seconds(), Error: r.Err,
		})
	}
	return s
}

// TargetStatus is a snapshot of one target; the admin API sends its Wire
// form.
type TargetStatus struct {
	// ID is the target's id (fleet host name).
	ID string `json:"id"`
	// Address is the target's host:port.
	Address string `json:"address"`
	// State is initial, healthy, unhealthy, draining or unused.
	State State `json:"state"`
	// Reason is the ALB reason code; empty when healthy.
	Reason Reason `json:"reason"`
	// Description explains Reason.
	Description string `json:"description"`
	// InRotation is the LB's own truth: whether a new request may be routed to
	// the target now. It accounts for fail-open.
	InRotation bool `json:"in_rotation"`
	// InFlight is the number of requests routed to the target and not yet
	// answered.
	InFlight int64 `json:"in_flight"`
	// LastChecks are the most recent health checks, newest first (at most 5).
	LastChecks []CheckStatus `json:"last_checks"`
}

// Wire is st as the admin API sends it (lbapi.TargetStatus, with lbport's
// states).
func (st TargetStatus) Wire() lbapi.TargetStatus {
	w := lbapi.TargetStatus{ID: st.ID, Address: st.Address, State: st.State.Port(), Reason: lbport.Reason(st.Reason),
		Description: st.Description, InRotation: st.InRotation, InFlight: st.InFlight,
		LastChecks: make([]lbapi.CheckStatus, len(st.LastChecks))}
	for i, c := range st.LastChecks {
		w.LastChecks[i] = lbapi.CheckStatus(c)
	}
	return w
}

// CheckStatus is one health check as the admin API reports it.
type CheckStatus struct {
	// At is when the check started (RFC 3339 with nanoseconds in JSON).
	At time.Time `json:"at"`
	// OK is whether it passed.
	OK bool `json:"ok"`
	// Status is the HTTP status answered; 0 when none.
	Status int `json:"status"`
	// DurationSeconds is how long it took, in seconds.
	DurationSeconds float64 `json:"duration_seconds"`
	// Error says why it failed; empty when it passed.
	Error string `json:"error"`
}

// connSet tracks a target's open backend connections so that the
// deregistration delay can cut off requests still in flight, as an ALB closes
// the connections of a target whose delay ran out.
type connSet struct {
	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

func newConnSet() *connSet { return &connSet{conns: map[*trackedConn]struct{}{}} }

// dialer returns the dial function of the target's HostClient: a TCP dial
// bounded by connectTimeout (and by the request's own timeout, whichever is
// shorter), registering each connection.
func (s *connSet) dialer(connectTimeout time.Duration) fasthttp.DialFuncWithTimeout {
	return func(addr string, timeout time.Duration) (net.Conn, error) {
		d := net.Dialer{Timeout: min(timeout, connectTimeout)}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		return s.add(c), nil
	}
}

func (s *connSet) add(c net.Conn) net.Conn {
	tc := &trackedConn{Conn: c, set: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return tc // its first use fails: the target is gone
	}
	s.conns[tc] = struct{}{}
	return tc
}

func (s *connSet) remove(c *trackedConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// closeAll closes every connection and every later one.
func (s *connSet) closeAll() {
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = map[*trackedConn]struct{}{}
	s.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
}

type trackedConn struct {
	net.Conn
	set *connSet
}

func (c *trackedConn) Close() error {
	c.set.remove(c)
	return c.Conn.Close()
}

package deploy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/agentapi"
)

// ErrLeaseLost: a lease of this deploy is gone — the agent no longer knows
// it, or by this deployer's own clock it expired before it was renewed (the
// deployer was frozen or starved). From then on the deploy changes nothing
// on that host or at the load balancer for it: the agent's own recovery
// returns the host to its last good version.
var ErrLeaseLost = errors.New("lease lost")

// lease is one lease this deploy holds on one agent, with this deployer's
// view of when it lapses: the moment the last successful renewal was sent
// plus the TTL, which is never later than the agent's own expiry.
type lease struct {
	agent Agent
	fleet bool
	host  string
	id    string
	ttl   time.Duration
	clock clockwork.Clock

	mu    sync.Mutex
	until time.Time
	lost  error
}

func newLease(a Agent, fleet bool, host string, l agentapi.Lease, ttl time.Duration, sent time.Time, clock clockwork.Clock) *lease {
	return &lease{agent: a, fleet: fleet, host: host, id: l.ID, ttl: ttl, clock: clock, until: sent.Add(ttl)}
}

func (l *lease) kind() string {
	if l.fleet {
		return "fleet lease"
	}
	return "host lease"
}

// confirm renews the lease now and returns nil only if the agent still
// holds it and the renewal came back within the TTL by this deployer's
// clock. Every change the deploy makes outside the agent (the LB) is
// preceded by a confirm: this is the fence. The agent is the authority on
// its lease; this deployer's clock decides alone only when the agent cannot
// be reached: a lease not renewed for its TTL is then lost, whatever the
// agent may still think. A renewal the agent granted but whose answer came
// back after the TTL (a starved deployer or agent) fences nothing and loses
// nothing: it is a transient error (ErrUnavailable), and the next confirm
// asks again; the lease is lost when the agent says so (its expiry came and
// its recovery took the host) or when no renewal at all comes back within
// the TTL. Errors: ErrLeaseLost (for good), or a transient
// error of the renewal while the lease may still be live.
func (l *lease) confirm(ctx context.Context) error {
	l.mu.Lock()
	if l.lost != nil {
		defer l.mu.Unlock()
		return l.lost
	}
	l.mu.Unlock()
	sent := l.clock.Now()
	_, err := l.agent.RenewLease(ctx, l.fleet, l.id, l.ttl)
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.lost != nil:
		return l.lost
	case errors.Is(err, agentapi.ErrNoLease):
		l.lost = fmt.Errorf("%w: %s's agent no longer holds this deploy's %s: %w", ErrLeaseLost, l.host, l.kind(), err)
		return l.lost
	case err != nil && !now.Before(l.until):
		l.lost = fmt.Errorf("%w: %s's %s expired by this deployer's clock %v ago, unrenewed (was the deploy frozen? last error: %w)",
			ErrLeaseLost, l.host, l.kind(), now.Sub(l.until).Round(time.Millisecond), err)
		return l.lost
	case err != nil:
		return err
	case !now.Before(sent.Add(l.ttl)):
		// The agent renewed it, so it held the lease until at least
		// sent+TTL; but that is past, and by now its expiry may have come
		// too: this answer fences nothing. Not lost — the agent, asked
		// again, says whether it still holds it (ErrNoLease once its
		// recovery took the host) — but not confirmed either.
		l.until = sent.Add(l.ttl)
		return fmt.Errorf("renewing %s's %s took %v, longer than its TTL: the answer is too old to act on; renewing again: %w",
			l.host, l.kind(), now.Sub(sent).Round(time.Millisecond), ErrUnavailable)
	}
	l.until = sent.Add(l.ttl)
	return nil
}

// isLost returns why the lease is lost, or nil.
func (l *lease) isLost() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// release ends the lease at the agent; a lost lease is not released (the
// agent already ended it, or its recovery owns the host now).
func (l *lease) release(ctx context.Context) {
	if l.isLost() != nil {
		return
	}
	_ = l.agent.ReleaseLease(ctx, l.fleet, l.id)
}

// keep renews l every third of its TTL until ctx ends; when it is lost for
// good, onLost runs once with the reason.
func (l *lease) keep(ctx context.Context, onLost func(error)) {
	t := l.clock.NewTicker(max(l.ttl/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
			if err := l.confirm(ctx); errors.Is(err, ErrLeaseLost) {
				if ctx.Err() == nil {
					onLost(err)
				}
				return
			}
		}
	}
}

package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/lbport"
)

// ErrUnavailable marks an LB or agent answer that says "try again" (a 5xx,
// a restart in progress): an LB implementation wraps it so the deploy retries.
var ErrUnavailable = errors.New("temporarily unavailable")

// permanentError stops a retry loop at once: the call was refused for a
// reason another try cannot change (a lost lease).
type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// lbError marks an error of the load balancer's driver, so transient judges
// it as lbport.IsTransient does (throttling is transient; refused
// credentials, an unknown target group or an invalid target are not).
type lbError struct{ err error }

func (e lbError) Error() string { return e.err.Error() }
func (e lbError) Unwrap() error { return e.err }

// fromLB wraps a driver's error as an lbError; nil stays nil.
func fromLB(err error) error {
	if err == nil {
		return nil
	}
	return lbError{err}
}

// transient reports whether err may go away on its own: the agent or the LB
// could not be reached, the connection broke, or it answered "unavailable";
// for the LB's driver, whatever lbport.IsTransient says (an ALB's
// ThrottlingException included). Refusals (a wrong token, a held or lost
// lease, a bad request) and the end of ctx are not transient.
func transient(err error) bool {
	var p permanentError
	var le lbError
	switch {
	case err == nil, errors.As(err, &p), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.As(err, &le):
		return lbport.IsTransient(le.err)
	case errors.Is(err, agentapi.ErrUnreachable), errors.Is(err, ErrUnavailable),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// backoff is the wait before retry n (0-based): 50ms doubling to 1s.
func backoff(n int) time.Duration {
	return min(50*time.Millisecond<<min(n, 5), time.Second)
}

// retry calls fn until it succeeds, fails for good, or the deploy's retry
// bound (Options.RetryFor) passes since the first failure. A transient
// failure is reported as a progress note naming what is retried, so one
// refused connection never fails a deploy and a long outage never goes
// unseen.
func (d *Deployer) retry(ctx context.Context, host string, p Phase, what string, fn func(context.Context) error) error {
	var first time.Time
	for n := 0; ; n++ {
		err := fn(ctx)
		if err == nil || !transient(err) {
			return err
		}
		if ctx.Err() != nil {
			return err
		}
		now := d.clock.Now()
		if first.IsZero() {
			first = now
		}
		if now.Sub(first) >= d.o.RetryFor {
			return fmt.Errorf("%s: still failing after %v of retries: %w", what, d.o.RetryFor.Round(time.Millisecond), err)
		}
		d.emit(host, p, EventProgress, now.Sub(first), fmt.Sprintf("%s failed (%v); retry %d", what, err, n+1))
		select {
		case <-ctx.Done():
			return err
		case <-d.clock.After(backoff(n)):
		}
	}
}

// call is retry for a call with a result.
func call[T any](d *Deployer, ctx context.Context, host string, p Phase, what string, fn func(context.Context) (T, error)) (T, error) {
	var out T
	err := d.retry(ctx, host, p, what, func(ctx context.Context) error {
		v, err := fn(ctx)
		if err == nil {
			out = v
		}
		return err
	})
	return out, err
}

package lb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/jonboulle/clockwork"
)

// CheckOutcome classifies one health check the way an ALB reports it.
type CheckOutcome uint8

// Health check outcomes.
const (
	// CheckPassed: the target answered 200 (the ALB default matcher).
	CheckPassed CheckOutcome = iota
	// CheckCodeMismatch: the target answered with another code
	// (Target.ResponseCodeMismatch).
	CheckCodeMismatch
	// CheckTimedOut: no complete answer within the timeout (Target.Timeout).
	CheckTimedOut
	// CheckConnFailed: the connection failed or the answer was malformed
	// (Target.FailedHealthChecks).
	CheckConnFailed
	// CheckInternalError: the check could not be run at all (Elb.InternalError);
	// the load balancer's fault, kept apart from the target's.
	CheckInternalError
)

var outcomeNames = [...]string{"passed", "code_mismatch", "timeout", "conn_failed", "internal_error"}

// String names o for logs and metric labels: passed, code_mismatch, timeout,
// conn_failed or internal_error.
func (o CheckOutcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("CheckOutcome(%d)", o)
}

// CheckResult is the result of one health check of one target.
type CheckResult struct {
	// At is when the check started.
	At time.Time
	// Outcome classifies the check.
	Outcome CheckOutcome
	// Status is the HTTP status the target answered; 0 when it did not answer.
	Status int
	// Duration is how long the check took.
	Duration time.Duration
	// Err says why a failed check failed; empty when it passed.
	Err string
}

// Passed reports whether the check passed.
func (r CheckResult) Passed() bool { return r.Outcome == CheckPassed }

// Reason is the ALB reason code a failed check gives an unhealthy target; ""
// for a passed check.
func (r CheckResult) Reason() Reason {
	switch r.Outcome {
	case CheckCodeMismatch:
		return ReasonResponseCodeMismatch
	case CheckTimedOut:
		return ReasonTimeout
	case CheckConnFailed:
		return ReasonFailedHealthChecks
	case CheckInternalError:
		return ReasonInternalError
	}
	return ReasonNone
}

// HealthChecker runs one health check against one target. ctx carries the
// health check timeout; Check must return when ctx is done. It fills Outcome, Status
// and Err; the caller fills At and Duration.
type HealthChecker interface {
	Check(ctx context.Context, address, path string) CheckResult
}

// HTTPHealthChecker checks a target with GET http://address/path, as an ALB
// does with the HTTP protocol: success is 200 (the default matcher), redirects are not
// followed, and the connection is closed after each check ("after each health
// check is completed, the load balancer node closes the connection").
type HTTPHealthChecker struct {
	client *http.Client
}

var _ HealthChecker = (*HTTPHealthChecker)(nil)

// healthCheckUserAgent is the User-Agent of health checks, after ALB's
// ELB-HealthChecker/2.0, so apps can tell checks from traffic.
const healthCheckUserAgent = "mythex-HealthChecker/1.0"

// NewHTTPHealthChecker returns an HTTPHealthChecker with its own transport (no keep-alive, no
// proxy from the environment).
func NewHTTPHealthChecker() *HTTPHealthChecker {
	tr := &http.Transport{
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 64 << 10,
		DisableCompression:     true,
	}
	return &HTTPHealthChecker{client: &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Check runs one check. A deadline reached while connecting, waiting or
// reading the body is CheckTimedOut; any other transport error is
// CheckConnFailed; a request that cannot even be built is CheckInternalError.
func (p *HTTPHealthChecker) Check(ctx context.Context, address, path string) CheckResult {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+path, nil)
	if err != nil {
		return CheckResult{Outcome: CheckInternalError, Err: err.Error()}
	}
	req.Header.Set("User-Agent", healthCheckUserAgent)
	resp, err := p.client.Do(req)
	if err != nil {
		return transportFailure(ctx, err)
	}
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if err != nil {
		return transportFailure(ctx, err)
	}
	// 200 only: an ALB target group's default success matcher.
	if resp.StatusCode != http.StatusOK {
		return CheckResult{Outcome: CheckCodeMismatch, Status: resp.StatusCode,
			Err: fmt.Sprintf("answered %d, want 200", resp.StatusCode)}
	}
	return CheckResult{Outcome: CheckPassed, Status: resp.StatusCode}
}

func transportFailure(ctx context.Context, err error) CheckResult {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return CheckResult{Outcome: CheckTimedOut, Err: "request timed out"}
	}
	return CheckResult{Outcome: CheckConnFailed, Err: err.Error()}
}

// checker runs the health checks of one target: one at once, then one every
// interval. As in an ALB, each check is independent and the time a target takes
// to answer does not move the next check; a check still running at the next
// tick delays it (the timeout must be shorter than the interval).
type checker struct {
	clock    clockwork.Clock
	log      *slog.Logger
	hc       HealthChecker
	address  string
	path     string
	interval time.Duration
	timeout  time.Duration
	// report receives every finished check, from the checker's goroutine.
	report func(CheckResult)
}

// run checks until ctx is done. It is the only goroutine of the checker.
func (c *checker) run(ctx context.Context) {
	ticker := c.clock.NewTicker(c.interval)
	defer ticker.Stop()
	for {
		r, ok := c.runOnce(ctx)
		if !ok {
			return
		}
		c.report(r)
		select {
		case <-ctx.Done():
			return
		case <-ticker.Chan():
		}
	}
}

// runOnce runs one check bounded by the timeout. ok is false when ctx ended
// during the check: the result means nothing then and is not reported.
func (c *checker) runOnce(ctx context.Context) (r CheckResult, ok bool) {
	start := c.clock.Now()
	cctx, cancel := clockwork.WithTimeout(ctx, c.clock, c.timeout)
	r = c.runCheck(cctx)
	cancel()
	if ctx.Err() != nil {
		return r, false
	}
	r.At, r.Duration = start, c.clock.Since(start)
	return r, true
}

// runCheck calls the health checker; a panic in it is logged and counts as
// Elb.InternalError, so one bad check never stops the loop.
func (c *checker) runCheck(ctx context.Context) (r CheckResult) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("health check panicked", "address", c.address, "panic", p)
			r = CheckResult{Outcome: CheckInternalError, Err: fmt.Sprintf("panic: %v", p)}
		}
	}()
	return c.hc.Check(ctx, c.address, c.path)
}

package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"
)

// Checker makes one HTTP health check of the app.
type Checker interface {
	// Check requests url and returns the outcome; it never returns an error:
	// a check that could not be made is a HealthResult with Error set.
	Check(ctx context.Context, url string) HealthResult
}

// HTTPChecker checks with GET: 2xx within Timeout is healthy, as an ALB
// health check with matcher 200-299.
type HTTPChecker struct {
	// Client sends the requests; nil uses a client without keep-alive (each
	// check opens its own connection, as a load balancer's checks do).
	Client *http.Client
	// Timeout bounds one check. Default 2s.
	Timeout time.Duration
}

var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: http.ProxyFromEnvironment}}

// Check implements Checker.
func (c HTTPChecker) Check(ctx context.Context, url string) HealthResult {
	p := HealthResult{Ran: true, Target: url}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	client := c.Client
	if client == nil {
		client = noKeepAlive
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		p.Error = fmt.Sprintf("bad health check URL: %v", err)
		return p
	}
	resp, err := client.Do(req)
	if err != nil {
		p.Error = describeNetErr(err)
		return p
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	p.Status = resp.StatusCode
	// Any 2xx, as Fly's HTTP checks pass; the verdict tells a gateway's
	// 502/503/504 (not ready) from the app's wrong answers.
	p.OK = resp.StatusCode >= 200 && resp.StatusCode < 300
	return p
}

func describeNetErr(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before a response"
	}
	return err.Error()
}

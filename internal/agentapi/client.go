package agentapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/history"
)

// Errors the Client returns (wrapped, with the agent's message) by HTTP status.
var (
	// ErrUnauthorized: 401, the token is missing or wrong.
	ErrUnauthorized = errors.New("agent refused the token")
	// ErrLeaseHeld: 409, someone else holds the lease or the host lock.
	ErrLeaseHeld = errors.New("lease held")
	// ErrNoLease: 412, the lease presented is not the live one.
	ErrNoLease = errors.New("no such lease")
	// ErrBadRequest: 400/422, the request (e.g. the definition) is invalid.
	ErrBadRequest = errors.New("agent rejected the request")
	// ErrUnreachable: the agent could not be reached at all.
	ErrUnreachable = errors.New("agent unreachable")
	// ErrNotFound: 404, the host keeps nothing under the name asked for
	// (a definition ref never set).
	ErrNotFound = errors.New("not found on the agent")
)

// Client calls one host agent. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// NewClient returns a client for the agent at base ("http://127.0.0.1:9201" or
// "127.0.0.1:9201"), authenticating with token. hc nil means a client with a
// 5 minute overall timeout (starts and stops wait on services).
func NewClient(base, token string, hc *http.Client) *Client {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Minute}
	}
	return &Client{base: strings.TrimRight(base, "/"), token: token, hc: hc}
}

// Base returns the agent's base URL.
func (c *Client) Base() string { return c.base }

func (c *Client) do(ctx context.Context, method, path, lease string, in, out any) error {
	var body io.Reader
	if in != nil {
		if raw, ok := in.([]byte); ok {
			body = bytes.NewReader(raw)
		} else {
			b, err := json.Marshal(in)
			if err != nil {
				return fmt.Errorf("agent %s %s: %w", method, path, err)
			}
			body = bytes.NewReader(b)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("agent %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if lease != "" {
		req.Header.Set(HeaderLease, lease)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("agent %s %s: %w", method, c.base+path, ctx.Err())
		}
		return fmt.Errorf("%w: %s %s: %w", ErrUnreachable, method, c.base+path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var eb ErrorBody
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &eb) == nil && eb.Error != "" {
			msg = eb.Error
		}
		return fmt.Errorf("%w: %s", statusErr(resp.StatusCode), msg)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("agent %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

func statusErr(code int) error {
	switch code {
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusConflict:
		return ErrLeaseHeld
	case http.StatusPreconditionFailed:
		return ErrNoLease
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return ErrBadRequest
	case http.StatusNotFound:
		return ErrNotFound
	}
	return fmt.Errorf("agent answered %d %s", code, http.StatusText(code))
}

// Status returns the host's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	err := c.do(ctx, http.MethodGet, PathStatus, "", nil, &s)
	return s, err
}

func leasePath(fleet bool) string {
	if fleet {
		return PathFleetLease
	}
	return PathLease
}

// AcquireLease takes the host lease (fleet false) or the fleet lease (fleet
// true) for holder; ErrLeaseHeld when taken.
func (c *Client) AcquireLease(ctx context.Context, fleet bool, holder string, ttl time.Duration) (Lease, error) {
	var l Lease
	err := c.do(ctx, http.MethodPost, leasePath(fleet), "", LeaseRequest{Holder: holder, TTL: ttl.String()}, &l)
	return l, err
}

// RenewLease extends lease id by ttl from now; ErrNoLease when it is gone.
func (c *Client) RenewLease(ctx context.Context, fleet bool, id string, ttl time.Duration) (Lease, error) {
	var l Lease
	err := c.do(ctx, http.MethodPut, leasePath(fleet), id, LeaseRequest{TTL: ttl.String()}, &l)
	return l, err
}

// ReleaseLease ends lease id.
func (c *Client) ReleaseLease(ctx context.Context, fleet bool, id string) error {
	return c.do(ctx, http.MethodDelete, leasePath(fleet), id, nil, nil)
}

// BreakLease ends the host lease (fleet false) or the fleet lease now, as if
// it had expired; for the host lease the agent's recovery runs before it
// answers. ErrLeaseHeld (409) while the holder still renews it and force is
// false; ErrNoLease when none is held.
func (c *Client) BreakLease(ctx context.Context, fleet, force bool, by string) (LeaseBreakReport, error) {
	var r LeaseBreakReport
	err := c.do(ctx, http.MethodPost, PathLeaseBreak, "", LeaseBreakRequest{Fleet: fleet, Force: force, By: by}, &r)
	return r, err
}

// Restored asks the agent whether its host is whole (RestoreStatus): what a
// deployer checks before it reports a rollback as failed, since the agent
// may have restored the host itself (lease recovery) or the rollback may
// have succeeded though its answer was lost.
func (c *Client) Restored(ctx context.Context) (RestoreStatus, error) {
	st, err := c.Status(ctx)
	if err != nil {
		return RestoreStatus{}, err
	}
	if st.Restore == nil {
		return RestoreStatus{}, fmt.Errorf("agent %s does not report whether its host is restored (an older agent)", c.base)
	}
	return *st.Restore, nil
}

// Publish makes def (a definition's canonical JSON) the host's current
// definition; the old current becomes previous. It does not start anything.
func (c *Client) Publish(ctx context.Context, lease string, def []byte) (PublishReport, error) {
	var r PublishReport
	err := c.do(ctx, http.MethodPut, PathDefinition, lease, def, &r)
	return r, err
}

// Drain sends SIGTERM to the named running services and returns at once: their
// health checks start failing while they keep serving for the drain period.
func (c *Client) Drain(ctx context.Context, lease string, services []string) error {
	return c.do(ctx, http.MethodPost, PathDrain, lease, ServicesRequest{Services: services}, nil)
}

// Stop stops every running service within its stop grace period (SIGTERM,
// SIGKILL at the deadline) and says how each one stopped.
func (c *Client) Stop(ctx context.Context, lease string) (StopReport, error) {
	var r StopReport
	err := c.do(ctx, http.MethodPost, PathStop, lease, ServicesRequest{}, &r)
	return r, err
}

// Start starts every service of the current definition and waits until each
// runs and answers its health check.
func (c *Client) Start(ctx context.Context, lease string) (StartReport, error) {
	var r StartReport
	err := c.do(ctx, http.MethodPost, PathStart, lease, ServicesRequest{}, &r)
	return r, err
}

// Verify checks the named services (all when empty) against the current
// definition at version. It needs no lease: it changes nothing.
func (c *Client) Verify(ctx context.Context, services []string, version string) (VerifyReport, error) {
	var r VerifyReport
	err := c.do(ctx, http.MethodPost, PathVerify, "", ServicesRequest{Services: services, Version: version}, &r)
	return r, err
}

// Rollback stops the current definition's services, makes the previous
// definition current again (restoring it, deleting nothing) and starts it.
func (c *Client) Rollback(ctx context.Context, lease string) (StartReport, error) {
	var r StartReport
	err := c.do(ctx, http.MethodPost, PathRollback, lease, nil, &r)
	return r, err
}

// MarkGood records the current definition as the host's last known good.
func (c *Client) MarkGood(ctx context.Context, lease string) error {
	return c.do(ctx, http.MethodPost, PathMarkGood, lease, nil, nil)
}

// Maintenance returns the watchdog's maintenance window (nil when none).
func (c *Client) Maintenance(ctx context.Context) (MaintenanceReport, error) {
	var r MaintenanceReport
	err := c.do(ctx, http.MethodGet, PathMaintenance, "", nil, &r)
	return r, err
}

// SetMaintenance pauses the watchdog's healing for d with a reason; a window
// already on is replaced. ErrBadRequest for a bad duration or reason.
func (c *Client) SetMaintenance(ctx context.Context, d time.Duration, reason, by string) (MaintenanceReport, error) {
	var r MaintenanceReport
	err := c.do(ctx, http.MethodPut, PathMaintenance, "", MaintenanceRequest{For: d.String(), Reason: reason, By: by}, &r)
	return r, err
}

// EndMaintenance ends maintenance now; the report's Ended is the window it
// ended, nil when none was on.
func (c *Client) EndMaintenance(ctx context.Context, by string) (MaintenanceReport, error) {
	var r MaintenanceReport
	path := PathMaintenance
	if by != "" {
		path += "?by=" + url.QueryEscape(by)
	}
	err := c.do(ctx, http.MethodDelete, path, "", nil, &r)
	return r, err
}

// Definition returns the host's stored definition under ref (current,
// previous or last_good), exactly as it was published. ErrNotFound when the
// host keeps none under ref.
func (c *Client) Definition(ctx context.Context, ref string) ([]byte, error) {
	var raw json.RawMessage
	err := c.do(ctx, http.MethodGet, PathDefinition+"?ref="+url.QueryEscape(ref), "", nil, &raw)
	return raw, err
}

// AppendHistory records one deploy as the agent's host saw it.
func (c *Client) AppendHistory(ctx context.Context, r history.Record) error {
	return c.do(ctx, http.MethodPost, PathHistory, "", r, nil)
}

// History lists the host's newest limit deploy records (≤ 0: all).
func (c *Client) History(ctx context.Context, limit int) ([]history.Record, error) {
	var l HistoryList
	path := PathHistory
	if limit > 0 {
		path += "?limit=" + strconv.Itoa(limit)
	}
	err := c.do(ctx, http.MethodGet, path, "", nil, &l)
	return l.Records, err
}

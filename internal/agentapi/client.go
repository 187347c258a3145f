package agentapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/mythex/mythex/internal/apiclient"
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
	// ErrNotFound: 404, no such thing on the agent (a definition ref never
	// set, a deploy kept without a timeline) — or an agent too old to serve
	// the path at all.
	ErrNotFound = errors.New("not found on the agent")
	// ErrUnreachable: the agent could not be reached at all.
	ErrUnreachable = errors.New("agent unreachable")
)

// Client calls one host agent. It is safe for concurrent use.
type Client struct {
	api *apiclient.Client
}

// NewClient returns a client for the agent at base ("http://127.0.0.1:9201" or
// "127.0.0.1:9201"), authenticating with token. hc nil means a client with a
// 5 minute overall timeout (starts and stops wait on services).
func NewClient(base, token string, hc *http.Client) *Client {
	return &Client{api: apiclient.New(base, token, hc, apiclient.Config{
		Name: "agent", Timeout: 5 * time.Minute, ErrorLimit: 64 << 10})}
}

// Base returns the agent's base URL.
func (c *Client) Base() string { return c.api.Base() }

// do calls the agent with lease (none when empty) and maps its answer's
// status to this package's errors; a request that never got an answer is
// ErrUnreachable unless ctx ended (then ctx's error).
func (c *Client) do(ctx context.Context, method, path, lease string, in, out any) error {
	req := apiclient.Request{Method: method, Path: path, Body: in}
	if lease != "" {
		req.Header = http.Header{HeaderLease: {lease}}
	}
	err := c.api.Do(ctx, req, out)
	var se *apiclient.StatusError
	var sendErr *apiclient.SendError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%w: %s", statusErr(se.Status), se.Message)
	case errors.As(err, &sendErr) && ctx.Err() != nil:
		return fmt.Errorf("agent %s %s: %w", method, sendErr.URL, ctx.Err())
	case errors.As(err, &sendErr):
		return fmt.Errorf("%w: %s %s: %w", ErrUnreachable, method, sendErr.URL, sendErr.Err)
	}
	return err
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
		return RestoreStatus{}, fmt.Errorf("agent %s does not report whether its host is restored (an older agent)", c.Base())
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

// Commit records in the host lease that the whole fleet passed the deploy's
// final sweep on version (PathCommit); ErrNoLease when the lease is gone.
func (c *Client) Commit(ctx context.Context, lease, version string) error {
	return c.do(ctx, http.MethodPost, PathCommit, lease, CommitRequest{Version: version}, nil)
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

// HistoryOf returns the host's record of deploy id (none when it has
// none). An agent that does not filter by id answers with every record;
// those of other deploys are dropped here.
func (c *Client) HistoryOf(ctx context.Context, id string) ([]history.Record, error) {
	var l HistoryList
	if err := c.do(ctx, http.MethodGet, PathHistory+"?id="+url.QueryEscape(id), "", nil, &l); err != nil {
		return nil, err
	}
	var out []history.Record
	for _, r := range l.Records {
		if r.ID == id {
			out = append(out, r)
		}
	}
	return out, nil
}

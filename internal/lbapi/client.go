package lbapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/mythex/mythex/internal/apiclient"
)

// Errors of Client calls, matched with errors.Is against an *APIError.
var (
	// ErrUnauthorized: the admin API refused the token (401).
	ErrUnauthorized = errors.New("lb admin: unauthorized (missing or wrong bearer token)")
	// ErrTargetNotFound: no target has this id (404).
	ErrTargetNotFound = errors.New("target not found")
	// ErrInvalidTarget: the id or the address is malformed (400).
	ErrInvalidTarget = errors.New("invalid target")
	// ErrTargetConflict: the id is registered with another address (409).
	ErrTargetConflict = errors.New("target registered with another address")
	// ErrInvalidSettings: PUT /v1/settings refused the settings (400); the
	// error says which field and why.
	ErrInvalidSettings = errors.New("lb admin: settings refused")
)

// APIError is an error answer of the admin API that has no sentinel of its
// own. 404, 400 and 409 also match ErrTargetNotFound, ErrInvalidTarget and
// ErrTargetConflict with errors.Is; 401 matches ErrUnauthorized.
type APIError struct {
	// Status is the HTTP status.
	Status int
	// Message is the API's error text.
	Message string
}

// Error formats the answer.
func (e *APIError) Error() string {
	return fmt.Sprintf("lb admin: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Transient reports whether a retry may succeed: a 5xx (the LB restarting,
// overloaded) or 429; other refusals stay refused (lbport.IsTransient reads
// it).
func (e *APIError) Transient() bool {
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests
}

// Is matches the sentinel of e's status.
func (e *APIError) Is(target error) bool {
	switch e.Status {
	case http.StatusUnauthorized:
		return target == ErrUnauthorized
	case http.StatusNotFound:
		return target == ErrTargetNotFound
	case http.StatusBadRequest:
		return target == ErrInvalidTarget
	case http.StatusConflict:
		return target == ErrTargetConflict
	}
	return false
}

// Client talks to the admin API of a mythex lb (docs/lb.md). Safe for
// concurrent use.
type Client struct {
	api *apiclient.Client
}

// NewClient returns a client for the admin API at baseURL ("http://127.0.0.1:8079";
// a bare host:port gets http://) with the bearer token. hc nil means a client
// with a 10s timeout.
func NewClient(baseURL, token string, hc *http.Client) *Client {
	return &Client{api: apiclient.New(baseURL, token, hc, apiclient.Config{
		Name: "lb admin", Timeout: 10 * time.Second, ErrorLimit: maxAnswer, AnswerLimit: maxAnswer})}
}

// maxAnswer is the most bytes of an answer the client reads (4 MiB).
const maxAnswer = 4 << 20

// Targets lists every registered or draining target.
func (c *Client) Targets(ctx context.Context) ([]TargetStatus, error) {
	var l TargetList
	if err := c.do(ctx, http.MethodGet, "/v1/targets", nil, &l); err != nil {
		return nil, err
	}
	return l.Targets, nil
}

// Target returns one target's status; ErrTargetNotFound (wrapped) once it is
// not registered nor draining.
func (c *Client) Target(ctx context.Context, id string) (TargetStatus, error) {
	var st TargetStatus
	err := c.do(ctx, http.MethodGet, "/v1/targets/"+url.PathEscape(id), nil, &st)
	return st, err
}

// Register registers id at address (state initial); a draining target becomes
// initial again. Errors match ErrInvalidTarget or ErrTargetConflict.
func (c *Client) Register(ctx context.Context, id, address string) (TargetStatus, error) {
	var st TargetStatus
	err := c.do(ctx, http.MethodPost, "/v1/targets", RegisterRequest{ID: id, Address: address}, &st)
	return st, err
}

// Deregister starts draining id. ErrTargetNotFound (wrapped) when it is not
// known; a caller that only wants it gone may treat that as done (an ALB's
// DeregisterTargets succeeds for unknown targets).
func (c *Client) Deregister(ctx context.Context, id string) (TargetStatus, error) {
	var st TargetStatus
	err := c.do(ctx, http.MethodDelete, "/v1/targets/"+url.PathEscape(id), nil, &st)
	return st, err
}

// Settings reads the target group's settings.
func (c *Client) Settings(ctx context.Context) (Settings, error) {
	var s Settings
	err := c.do(ctx, http.MethodGet, "/v1/settings", nil, &s)
	return s, err
}

// SetSettings sets the target group's settings, all of them, while it
// serves (as ALB ModifyTargetGroup and ModifyTargetGroupAttributes), and
// returns them as the LB now has them. Settings it refuses (a timeout not
// under the interval, a threshold under 1, an unknown algorithm) are an error
// matching ErrInvalidSettings, and nothing changed.
func (c *Client) SetSettings(ctx context.Context, s Settings) (Settings, error) {
	var out Settings
	err := c.do(ctx, http.MethodPut, "/v1/settings", s, &out)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
		return out, fmt.Errorf("%w: %s", ErrInvalidSettings, ae.Message)
	}
	return out, err
}

// WaitOutOfRotation polls target id every poll until the LB routes no new
// request to it and none is in flight (in_rotation false and in_flight 0, or
// the target gone): the drain handshake's condition. It returns ctx's error
// when ctx ends first, or the first error other than ErrTargetNotFound.
func (c *Client) WaitOutOfRotation(ctx context.Context, id string, poll time.Duration) error {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		st, err := c.Target(ctx, id)
		switch {
		case errors.Is(err, ErrTargetNotFound):
			return nil
		case err != nil:
			return err
		case !st.InRotation && st.InFlight == 0:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("target %s still in rotation or with requests in flight: %w", id, ctx.Err())
		case <-t.C:
		}
	}
}

// do calls the admin API; an answer other than 2xx is an *APIError,
// wrapped with the method and the path.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	err := c.api.Do(ctx, apiclient.Request{Method: method, Path: path, Body: in}, out)
	var se *apiclient.StatusError
	if errors.As(err, &se) {
		return fmt.Errorf("%s %s: %w", method, path, &APIError{Status: se.Status, Message: se.Message})
	}
	return err
}

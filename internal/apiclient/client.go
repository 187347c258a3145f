// Package apiclient is a JSON-over-HTTP client for an API that takes a
// bearer token: the one core under mythex's clients of its own admin APIs
// (the host agent's, internal/agentapi; the embedded load balancer's,
// internal/lbapi). It sends a request with "Authorization: Bearer <token>"
// and a JSON (or raw) body, and on a 2xx answer decodes its JSON body; any
// other status is a *StatusError carrying the API's {"error": "..."}
// message (or the answer's text), which each API's client maps to its own
// errors. It knows nothing of any API's paths, sentinels or headers.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Config is what differs between the APIs a Client calls.
type Config struct {
	// Name begins every error message that is not a *StatusError, e.g.
	// "agent" or "lb admin".
	Name string
	// Timeout is the overall timeout of the default *http.Client New makes
	// when given none (http.Client.Timeout: dial to the answer's last byte).
	Timeout time.Duration
	// ErrorLimit is how many bytes of a non-2xx answer are read for its
	// message; the rest is not read.
	ErrorLimit int64
	// AnswerLimit is how many bytes of a 2xx JSON answer are read at most
	// (a longer answer is cut there and fails to decode); 0 reads it all.
	AnswerLimit int64
}

// Client calls one API at one base URL with one bearer token. It is safe for
// concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
	cfg   Config
}

// New returns a client for the API at base ("http://127.0.0.1:9201"; a bare
// "host:port" gets http://, a trailing / is dropped), authenticating with
// token. hc nil means a new *http.Client with cfg.Timeout.
func New(base, token string, hc *http.Client, cfg Config) *Client {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	if hc == nil {
		hc = &http.Client{Timeout: cfg.Timeout}
	}
	return &Client{base: strings.TrimRight(base, "/"), token: token, hc: hc, cfg: cfg}
}

// Base returns the API's base URL as New normalised it.
func (c *Client) Base() string { return c.base }

// Request is one call of the API.
type Request struct {
	// Method is the HTTP method.
	Method string
	// Path follows the base URL, with its query if any ("/v1/targets/a").
	Path string
	// Header holds headers to send besides Authorization and Content-Type
	// (e.g. a lease); nil for none.
	Header http.Header
	// Body is nil for no body, a []byte sent as it is, or any other value
	// sent JSON-encoded. A request with a body says Content-Type:
	// application/json.
	Body any
}

// Raw receives a 2xx answer that is not decoded (not JSON, or JSON kept as
// it is): its bytes, at most Max+1 of them, so the caller sees when the API
// sent more than Max.
type Raw struct {
	// Max is the most bytes the caller accepts.
	Max int64
	// Bytes is the answer as read.
	Bytes []byte
}

// Do sends req and reads the answer into out: nil discards a 2xx answer's
// body, a *Raw receives its bytes, anything else is decoded from its JSON.
//
// Errors: a non-2xx answer is a *StatusError (its message from at most
// Config.ErrorLimit bytes); a request that could not be sent, or whose
// answer's head did not arrive (refused, reset, timeout, ctx ended), wraps a
// *SendError; a body that could not be encoded or an answer that could not
// be read or decoded is wrapped with "<Name> <method> <path>: ".
func (c *Client) Do(ctx context.Context, req Request, out any) error {
	var body io.Reader
	if req.Body != nil {
		b, ok := req.Body.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(req.Body); err != nil {
				return c.errorf(req, "%w", err)
			}
		}
		body = bytes.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, c.base+req.Path, body)
	if err != nil {
		return c.errorf(req, "%w", err)
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	hr.Header.Set("Authorization", "Bearer "+c.token)
	if req.Body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		return c.errorf(req, "%w", &SendError{URL: c.base + req.Path, Err: err})
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, c.cfg.ErrorLimit))
		return &StatusError{Status: resp.StatusCode, Message: message(b)}
	}
	return c.answer(req, resp.Body, out)
}

// answer reads a 2xx answer's body into out (see Do).
func (c *Client) answer(req Request, body io.Reader, out any) error {
	if c.cfg.AnswerLimit > 0 {
		body = io.LimitReader(body, c.cfg.AnswerLimit)
	}
	switch out := out.(type) {
	case nil:
		_, _ = io.Copy(io.Discard, body)
		return nil
	case *Raw:
		b, err := io.ReadAll(io.LimitReader(body, out.Max+1))
		if err != nil {
			return c.errorf(req, "read answer: %w", err)
		}
		out.Bytes = b
		return nil
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return c.errorf(req, "read answer: %w", err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return c.errorf(req, "decode answer: %w", err)
	}
	return nil
}

// errorf wraps a failure of req with the API's name, the method and the path.
func (c *Client) errorf(req Request, format string, args ...any) error {
	return fmt.Errorf("%s %s %s: "+format, append([]any{c.cfg.Name, req.Method, req.Path}, args...)...)
}

package fly

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/platform"
)

// DefaultBaseURL is the public Machines API endpoint.
const DefaultBaseURL = "https://api.machines.dev"

// TokenEnv is the environment variable flyctl and the Fly docs use for an API
// token.
const TokenEnv = "FLY_API_TOKEN"

// Options configure a Client.
type Options struct {
	// BaseURL is the API's base URL, without /v1. Default DefaultBaseURL.
	BaseURL string
	// Token authenticates every request: "FlyV1 ..." macaroon tokens are sent
	// as they are, others as "Bearer <token>". Default $FLY_API_TOKEN.
	Token string
	// HTTPClient sends the requests. Default: a client with a 30 s timeout.
	HTTPClient *http.Client
	// Retries is how many times a request refused with 429 (and a GET that
	// failed with a 5xx or a network error) is tried again. After a 429 the
	// client waits at least a full second (the documented buckets refill at
	// 1/s), doubling per attempt, or the Retry-After the API gives when that
	// is longer — never less because Retry-After says 0. Default 2; negative
	// disables retries.
	Retries int
	// MaxRetryWait caps one wait between retries. Default 5s.
	MaxRetryWait time.Duration
	// NoPacing turns off the client-side pacing to the documented rate
	// limits (ActionRate/ActionBurst per action per machine, ReadRate/
	// ReadBurst for reads). Default: paced.
	NoPacing bool
	// LeaseTTL is how long a lease taken by AcquireLease lasts when the
	// caller gives none. Default 5m.
	LeaseTTL time.Duration
	// PrivateAddresses sets Machine.Address from private_ip and the first
	// service's internal port: use it only where that network is reachable
	// (inside Fly's private network, or the local platform's daemon).
	PrivateAddresses bool
	// Name is what Name() returns. Default "fly".
	Name string
	// Clock times the waits between retries. Default real.
	Clock clockwork.Clock
	// CheckImage, when set, is what CheckImage asks before any machine
	// changes (the local platform's daemon runs on this host, so its
	// executables can be checked here). Nil: the Machines API itself refuses
	// an image it cannot resolve on create or update.
	CheckImage func(ctx context.Context, image string) error
}

// Client is a platform.Platform over the Fly Machines API v1.
type Client struct {
	base  *url.URL
	auth  string
	hc    *http.Client
	opts  Options
	clock clockwork.Clock
	pace  *pacer

	mu     sync.Mutex
	leases map[string]string // app/id -> nonce of the lease this client holds
	calls  map[string]int    // requests sent, by pace key kind ("read", "POST update", ...)
}

var _ platform.Platform = (*Client)(nil)

// New returns a client. It fails with platform.ErrInvalid when the base URL
// is not an absolute http(s) URL or there is no token.
func New(opts Options) (*Client, error) {
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(strings.TrimSuffix(opts.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: Machines API URL %q: give an absolute http(s) URL such as %s", platform.ErrInvalid, opts.BaseURL, DefaultBaseURL)
	}
	if opts.Token == "" {
		opts.Token = os.Getenv(TokenEnv)
	}
	if opts.Token == "" {
		return nil, fmt.Errorf("%w: no Machines API token: set $%s or give --fly-token", platform.ErrInvalid, TokenEnv)
	}
	auth := "Bearer " + opts.Token
	if strings.HasPrefix(opts.Token, "FlyV1 ") {
		auth = opts.Token
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.Retries == 0 {
		opts.Retries = 2
	}
	if opts.MaxRetryWait <= 0 {
		opts.MaxRetryWait = 5 * time.Second
	}
	if opts.Name == "" {
		opts.Name = "fly"
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 5 * time.Minute
	}
	return &Client{base: u, auth: auth, hc: opts.HTTPClient, opts: opts, clock: opts.Clock, pace: newPacer(opts.Clock, opts.NoPacing),
		leases: map[string]string{}, calls: map[string]int{}}, nil
}

// CheckImage implements platform.ImageChecker through Options.CheckImage;
// without it every image passes here and the API's own refusal (an answer
// naming the image as not found) is mapped to platform.ErrImageNotFound.
func (c *Client) CheckImage(ctx context.Context, image string) error {
	if c.opts.CheckImage == nil {
		return nil
	}
	return c.opts.CheckImage(ctx, image)
}

var _ platform.ImageChecker = (*Client)(nil)

// Name implements platform.Platform.
func (c *Client) Name() string { return c.opts.Name }

func machinesPath(app string, parts ...string) string {
	p := "/v1/apps/" + url.PathEscape(app) + "/machines"
	for _, s := range parts {
		p += "/" + url.PathEscape(s)
	}
	return p
}

// do sends one API request (with retries) and decodes a 2xx JSON answer into
// out (when not nil). Errors wrap the platform sentinels by status: 404
// ErrNotFound, 400/422 ErrInvalid, 401/403 ErrUnauthorized, 408 ErrTimeout,
// 409/412 ErrConflict, 429 ErrRateLimited, 5xx and network errors
// ErrUnavailable.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		body = b
	}
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	nonce := c.nonceFor(method, path)
	wait := 200 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if err := c.pace.wait(ctx, method, path); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		c.count(method, path)
		retryAfter, err := c.once(ctx, method, u.String(), body, out, nonce)
		if err == nil {
			return nil
		}
		limited := errors.Is(err, platform.ErrRateLimited)
		retry := limited || (method == http.MethodGet && errors.Is(err, platform.ErrUnavailable))
		if !retry || attempt >= c.opts.Retries || ctx.Err() != nil {
			return err
		}
		d := min(wait, c.opts.MaxRetryWait)
		if limited {
			d = backoff429(attempt, retryAfter, c.opts.MaxRetryWait)
		}
		wait *= 2
		select {
		case <-ctx.Done():
			return err
		case <-c.clock.After(d):
		}
	}
}

// nonceFor is the lease nonce to send with a write to the machine path
// names, when this client holds its lease.
func (c *Client) nonceFor(method, path string) string {
	if method == http.MethodGet {
		return ""
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 5 {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leases[parts[2]+"/"+parts[4]]
}

func (c *Client) count(method, path string) {
	key, read := paceKey(method, path)
	kind := "read"
	if !read {
		kind = strings.Join(strings.Fields(key)[:2], " ")
	}
	c.mu.Lock()
	c.calls[kind]++
	c.mu.Unlock()
}

// Calls returns how many requests the client has sent, by kind ("read",
// "POST update", "POST lease", ...), retries included.
func (c *Client) Calls() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

func (c *Client) once(ctx context.Context, method, u string, body []byte, out any, nonce string) (time.Duration, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, u, err)
	}
	req.Header.Set("Authorization", c.auth)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "mythex")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if nonce != "" {
		req.Header.Set(NonceHeader, nonce)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return 0, fmt.Errorf("%s %s: %w: %w", method, req.URL.Path, platform.ErrTimeout, err)
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("%s %s: %w", method, req.URL.Path, err)
		}
		return 0, fmt.Errorf("%s %s: %w: %w", method, req.URL.Path, platform.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, fmt.Errorf("%s %s: read answer: %w: %w", method, req.URL.Path, platform.ErrUnavailable, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out != nil && len(bytes.TrimSpace(b)) > 0 {
			if err := json.Unmarshal(b, out); err != nil {
				return 0, fmt.Errorf("%s %s: decode answer: %w", method, req.URL.Path, err)
			}
		}
		return 0, nil
	}
	msg := strings.TrimSpace(string(b))
	var ae apiError
	if json.Unmarshal(b, &ae) == nil && (ae.Error != "" || ae.Message != "") {
		msg = ae.Error
		if ae.Message != "" {
			msg = ae.Message
		}
	}
	var retryAfter time.Duration
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		retryAfter = time.Duration(s) * time.Second
	}
	kind := statusErr(resp.StatusCode)
	if resp.StatusCode == http.StatusConflict && strings.Contains(strings.ToLower(msg), "lease") {
		kind = platform.ErrLeaseHeld
	}
	if (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnprocessableEntity || resp.StatusCode == http.StatusNotFound) &&
		imageNotFound(msg) {
		kind = platform.ErrImageNotFound
	}
	return retryAfter, fmt.Errorf("%s %s: %w: HTTP %d: %s", method, req.URL.Path, kind, resp.StatusCode, msg)
}

// imageNotFound reports whether an API refusal says the image could not be
// found or resolved (the registry's "manifest unknown", the local daemon's
// "image not found").
func imageNotFound(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "image not found") || strings.Contains(m, "manifest unknown") ||
		(strings.Contains(m, "image") && (strings.Contains(m, "not found") || strings.Contains(m, "unable to resolve")))
}

func statusErr(code int) error {
	switch {
	case code == http.StatusNotFound:
		return platform.ErrNotFound
	case code == http.StatusBadRequest, code == http.StatusUnprocessableEntity:
		return platform.ErrInvalid
	case code == http.StatusUnauthorized, code == http.StatusForbidden:
		return platform.ErrUnauthorized
	case code == http.StatusRequestTimeout:
		return platform.ErrTimeout
	case code == http.StatusConflict, code == http.StatusPreconditionFailed:
		return platform.ErrConflict
	case code == http.StatusTooManyRequests:
		return platform.ErrRateLimited
	default:
		return platform.ErrUnavailable
	}
}

// List implements platform.Platform (GET /v1/apps/{app}/machines). Destroyed
// machines are left out, and so are release-command, console and test
// machines (reserved fly_process_group values): they are not the app's, a
// publish leaves them alone.
func (c *Client) List(ctx context.Context, app string) ([]platform.Machine, error) {
	var ms []apiMachine
	if err := c.do(ctx, http.MethodGet, machinesPath(app), nil, nil, &ms); err != nil {
		return nil, err
	}
	out := make([]platform.Machine, 0, len(ms))
	for _, m := range ms {
		if m.State == string(platform.StateDestroyed) || m.State == string(platform.StateDestroying) || !m.serving() {
			continue
		}
		out = append(out, m.toPlatform(app, c.opts.PrivateAddresses))
	}
	return out, nil
}

// Get implements platform.Platform (GET /v1/apps/{app}/machines/{id}).
func (c *Client) Get(ctx context.Context, app, id string) (platform.Machine, error) {
	var m apiMachine
	if err := c.do(ctx, http.MethodGet, machinesPath(app, id), nil, nil, &m); err != nil {
		return platform.Machine{}, err
	}
	return m.toPlatform(app, c.opts.PrivateAddresses), nil
}

// Create implements platform.Platform (POST /v1/apps/{app}/machines).
func (c *Client) Create(ctx context.Context, app string, cfg platform.Config) (platform.Machine, error) {
	if err := cfg.Validate(); err != nil {
		return platform.Machine{}, err
	}
	raw, err := toMap(configFromPlatform(cfg))
	if err != nil {
		return platform.Machine{}, err
	}
	var m apiMachine
	if err := c.do(ctx, http.MethodPost, machinesPath(app), nil, createRequest{Config: raw}, &m); err != nil {
		return platform.Machine{}, err
	}
	return m.toPlatform(app, c.opts.PrivateAddresses), nil
}

// Update implements platform.Platform (POST /v1/apps/{app}/machines/{id}).
// The machine's current config is read first and only image, env, init.cmd,
// restart, metadata and the first service's internal port are changed: guest
// size, mounts, checks and the rest are kept as they are, as flyctl does.
func (c *Client) Update(ctx context.Context, app, id string, cfg platform.Config) (platform.Machine, error) {
	if err := cfg.Validate(); err != nil {
		return platform.Machine{}, err
	}
	var cur struct {
		Config     map[string]any `json:"config"`
		Version    string         `json:"version"`
		InstanceID string         `json:"instance_id"`
		State      string         `json:"state"`
		HostStatus string         `json:"host_status"`
		Events     []apiEvent     `json:"events"`
	}
	if err := c.do(ctx, http.MethodGet, machinesPath(app, id), nil, nil, &cur); err != nil {
		return platform.Machine{}, err
	}
	if len(cur.Config) == 0 {
		// host_status not ok: only a partial incomplete_config exists.
		// Patching it would drop guest size, mounts and checks.
		return platform.Machine{}, fmt.Errorf("update machine %s: %w (host_status %q); not updating it from a partial config",
			id, platform.ErrIncompleteConfig, cur.HostStatus)
	}
	req := createRequest{Config: patchConfig(cur.Config, cfg), CurrentVersion: cur.Version}
	if req.CurrentVersion == "" {
		req.CurrentVersion = cur.InstanceID
	}
	// A machine put to sleep on purpose (autostop, a requested stop, a
	// suspend) stays asleep when updated (skip_launch): the proxy starts it
	// when traffic comes. One stopped because it crashed and the platform
	// gave up (a rollback's target) is launched.
	req.SkipLaunch = cur.State == string(platform.StateSuspended) ||
		(cur.State == string(platform.StateStopped) && asleep(cur.Events))
	var m apiMachine
	if err := c.do(ctx, http.MethodPost, machinesPath(app, id), nil, req, &m); err != nil {
		return platform.Machine{}, err
	}
	return m.toPlatform(app, c.opts.PrivateAddresses), nil
}

// asleep reports whether the newest exit in events (newest first) was a
// requested stop.
func asleep(events []apiEvent) bool {
	for _, e := range events {
		if e.Type != string(platform.EventExit) {
			continue
		}
		x := e.toPlatform().Exit
		return x != nil && x.RequestedStop
	}
	return false
}

// patchConfig sets cfg's fields in a raw config, keeping every other key.
func patchConfig(raw map[string]any, cfg platform.Config) map[string]any {
	if raw == nil {
		raw = map[string]any{}
	}
	raw["image"] = cfg.Image
	if cfg.Env != nil {
		raw["env"] = cfg.Env
	} else {
		delete(raw, "env")
	}
	raw["restart"] = map[string]any{"policy": string(cfg.Restart.Policy), "max_retries": cfg.Restart.MaxRetries}
	md, _ := raw["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	for k, v := range cfg.Metadata {
		md[k] = v
	}
	raw["metadata"] = md
	init, _ := raw["init"].(map[string]any)
	if len(cfg.Args) > 0 {
		if init == nil {
			init = map[string]any{}
		}
		init["cmd"] = cfg.Args
		raw["init"] = init
	} else if init != nil {
		delete(init, "cmd")
	}
	if cfg.Port > 0 {
		svcs, _ := raw["services"].([]any)
		if len(svcs) > 0 {
			if s, ok := svcs[0].(map[string]any); ok {
				s["internal_port"] = cfg.Port
			}
		} else {
			def, _ := toMap(configFromPlatform(platform.Config{Port: cfg.Port}))
			raw["services"] = def["services"]
		}
	}
	return raw
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}

// CreateUnrouted implements platform.UnroutedCreator: POST
// /v1/apps/{app}/machines with skip_service_registration, so Fly Proxy does
// not route to the machine until Uncordon registers it.
func (c *Client) CreateUnrouted(ctx context.Context, app string, cfg platform.Config) (platform.Machine, error) {
	if err := cfg.Validate(); err != nil {
		return platform.Machine{}, err
	}
	raw, err := toMap(configFromPlatform(cfg))
	if err != nil {
		return platform.Machine{}, err
	}
	var m apiMachine
	if err := c.do(ctx, http.MethodPost, machinesPath(app), nil, createRequest{Config: raw, SkipServiceRegistration: true}, &m); err != nil {
		return platform.Machine{}, err
	}
	return m.toPlatform(app, c.opts.PrivateAddresses), nil
}

var _ platform.UnroutedCreator = (*Client)(nil)

// Cordon takes the machine out of Fly Proxy's routing (POST .../cordon).
func (c *Client) Cordon(ctx context.Context, app, id string) error {
	return c.do(ctx, http.MethodPost, machinesPath(app, id, "cordon"), nil, nil, nil)
}

// Uncordon registers the machine with Fly Proxy again (POST .../uncordon),
// as flyctl's blue-green deploy does once the green machines pass.
func (c *Client) Uncordon(ctx context.Context, app, id string) error {
	return c.do(ctx, http.MethodPost, machinesPath(app, id, "uncordon"), nil, nil, nil)
}

// Routing is what Fly Proxy does with a machine: whether it is cordoned,
// its state, and whether its checks pass (true when it has none).
func (c *Client) Routing(ctx context.Context, app, id string) (cordoned bool, state platform.State, checksPass bool, err error) {
	var m apiMachine
	if err := c.do(ctx, http.MethodGet, machinesPath(app, id), nil, nil, &m); err != nil {
		return false, "", false, err
	}
	checksPass = true
	for _, ch := range m.Checks {
		if !strings.HasPrefix(ch.Name, "bg_deployments_compat") && ch.Status != "passing" {
			checksPass = false
		}
	}
	return m.Cordoned, platform.State(m.State), checksPass, nil
}

// Start implements platform.Platform (POST .../start).
func (c *Client) Start(ctx context.Context, app, id string) error {
	return c.do(ctx, http.MethodPost, machinesPath(app, id, "start"), nil, nil, nil)
}

// Stop implements platform.Platform (POST .../stop).
func (c *Client) Stop(ctx context.Context, app, id string) error {
	return c.do(ctx, http.MethodPost, machinesPath(app, id, "stop"), nil, map[string]any{}, nil)
}

// Suspend puts a machine to sleep (POST .../suspend).
func (c *Client) Suspend(ctx context.Context, app, id string) error {
	return c.do(ctx, http.MethodPost, machinesPath(app, id, "suspend"), nil, nil, nil)
}

// Destroy implements platform.Platform (DELETE .../{id}?force=true).
func (c *Client) Destroy(ctx context.Context, app, id string) error {
	return c.do(ctx, http.MethodDelete, machinesPath(app, id), url.Values{"force": {"true"}}, nil, nil)
}

// NonceHeader carries a held lease's nonce on every write (fly-go
// flaps.NonceHeader).
const NonceHeader = "fly-machine-lease-nonce"

// apiLease is the answer of POST .../lease (fly-go MachineLease).
type apiLease struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Data    *struct {
		Nonce     string `json:"nonce,omitempty"`
		ExpiresAt int64  `json:"expires_at,omitempty"`
		Owner     string `json:"owner,omitempty"`
		Version   string `json:"version,omitempty"`
	} `json:"data,omitempty"`
}

// AcquireLease implements platform.Leaser (POST .../lease?ttl=SECONDS, as
// flaps AcquireLease; refreshed with the nonce when this client holds it
// already). Someone else's lease is a 409 naming its owner: ErrLeaseHeld.
func (c *Client) AcquireLease(ctx context.Context, app, id string, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = c.opts.LeaseTTL
	}
	q := url.Values{"ttl": {strconv.Itoa(max(1, int(ttl.Seconds())))}}
	var l apiLease
	if err := c.do(ctx, http.MethodPost, machinesPath(app, id, "lease"), q, nil, &l); err != nil {
		if errors.Is(err, platform.ErrConflict) && !errors.Is(err, platform.ErrLeaseHeld) {
			err = fmt.Errorf("%w: %w", platform.ErrLeaseHeld, err)
		}
		return err
	}
	if l.Data == nil || l.Data.Nonce == "" {
		return fmt.Errorf("lease on machine %s: %w: the API gave no nonce", id, platform.ErrUnavailable)
	}
	c.mu.Lock()
	c.leases[app+"/"+id] = l.Data.Nonce
	c.mu.Unlock()
	return nil
}

// ReleaseLease implements platform.Leaser (DELETE .../lease with the nonce).
func (c *Client) ReleaseLease(ctx context.Context, app, id string) error {
	c.mu.Lock()
	_, held := c.leases[app+"/"+id]
	c.mu.Unlock()
	if !held {
		return nil
	}
	err := c.do(ctx, http.MethodDelete, machinesPath(app, id, "lease"), nil, nil, nil)
	if err == nil || errors.Is(err, platform.ErrNotFound) {
		c.mu.Lock()
		delete(c.leases, app+"/"+id)
		c.mu.Unlock()
		return nil
	}
	return err
}

var _ platform.Leaser = (*Client)(nil)

// Wait implements platform.Platform (GET .../wait?state=&timeout=): the API
// blocks at most 60 s per request (a timeout outside 1–60 is refused with
// 400) and answers 408 when that runs out, so longer waits are made of
// several requests. Waiting for stopped needs the instance: the machine is
// read first and its current instance_id sent, so the wait matches this
// instance, not an older one.
func (c *Client) Wait(ctx context.Context, app, id string, state platform.State, timeout time.Duration) error {
	deadline := c.clock.Now().Add(timeout)
	instance := ""
	if state == platform.StateStopped {
		m, err := c.Get(ctx, app, id)
		if err != nil {
			return err
		}
		instance = m.InstanceID
	}
	for {
		left := deadline.Sub(c.clock.Now())
		if left <= 0 {
			return fmt.Errorf("wait for machine %s to be %s: %w after %s", id, state, platform.ErrTimeout, timeout)
		}
		secs := int(min(left, 60*time.Second).Seconds())
		if secs < 1 {
			secs = 1
		}
		secs = min(secs, 60)
		q := url.Values{"state": {string(state)}, "timeout": {strconv.Itoa(secs)}}
		if instance != "" {
			q.Set("instance_id", instance)
		}
		began := c.clock.Now()
		err := c.do(ctx, http.MethodGet, machinesPath(app, id, "wait"), q, nil, nil)
		if err == nil {
			return nil
		}
		if !errors.Is(err, platform.ErrTimeout) || ctx.Err() != nil {
			return err
		}
		if c.clock.Since(began) < time.Duration(secs)*time.Second/2 {
			// The API gave up early: do not spin.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-c.clock.After(200 * time.Millisecond):
			}
		}
	}
}

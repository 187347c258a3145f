package drain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"
)

// Defaults applied by [New] to zero fields of [Config].
const (
	// DefaultHealthPath is the health endpoint's URL path.
	DefaultHealthPath = "/healthz"
	// DefaultServePeriod is D, the write-up's 15s: it beats a load balancer
	// that checks every 5s, needs 2 failures and waits up to 2s per check
	// (detection 12s). It does NOT beat ALB defaults (30s × 2 + 5s = 65s).
	DefaultServePeriod = 15 * time.Second
	// DefaultShutdownTimeout is S, 10s.
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultIdleTimeout is the server's keep-alive idle timeout, 75s: longer
	// than ALB's default idle timeout of 60s.
	DefaultIdleTimeout = 75 * time.Second
)

// ErrInvalidConfig is returned (wrapped, naming the field and the fix) by [New]
// when a [Config] field is out of range.
var ErrInvalidConfig = errors.New("drain: invalid config")

// Config says how a [Server] drains. The zero value is usable: every zero field
// takes its default, applied in one place by [New]. Durations are wall-clock
// time.Duration values; negative durations are rejected.
type Config struct {
	// HealthPath is the URL path of the health endpoint, answered by drain
	// itself before the application's handler sees the request: 200 "ok" while
	// serving (and Ready agrees), 503 "draining" from the instant the drain
	// starts. It must start with "/". Default "/healthz".
	HealthPath string

	// Ready, when set, is consulted by the health endpoint while the server is
	// not draining: a nil error answers 200 "ok", an error answers 503 with the
	// error's text. It is called with the health request's context for every
	// health request, concurrently, so it must be fast and safe for concurrent
	// use. Once draining, the endpoint answers 503 without calling it.
	Ready func(ctx context.Context) error

	// ServePeriod (D) is how long real traffic is still served after the drain
	// starts and the health endpoint flips to 503. It must exceed the load
	// balancer's detection time (interval × unhealthy threshold + timeout).
	// Default 15s ([DefaultServePeriod]). Zero means the default, never "no
	// serve period": shutting down as soon as health flips is the bug this
	// package exists to prevent; tests that want a short one set a small
	// positive value.
	ServePeriod time.Duration

	// ShutdownTimeout (S) bounds the graceful shutdown that follows the serve
	// period: in-flight requests get this long to finish, then their
	// connections are closed. ServePeriod + ShutdownTimeout must fit in the stop
	// grace period. Default 10s ([DefaultShutdownTimeout]).
	ShutdownTimeout time.Duration

	// IdleTimeout is the server's keep-alive idle timeout: how long an idle
	// connection is kept open waiting for the next request. [New] sets
	// http.Server.IdleTimeout to it. It must exceed the load balancer's idle
	// timeout (ALB default 60s) so that the load balancer, not the server,
	// closes idle connections. Default: http.Server.IdleTimeout when that is
	// already set, else 75s ([DefaultIdleTimeout]).
	IdleTimeout time.Duration

	// Signals are the signals that start the drain while [Server.Serve] runs;
	// repeats of them skip the rest of the serve period, then stop the server
	// (see the package documentation). Default SIGTERM and SIGINT.
	Signals []os.Signal

	// NoSignals turns signal handling off: only [Server.Drain] or cancelling
	// Serve's context start the drain. It cannot be combined with Signals.
	NoSignals bool

	// IgnoreRepeatedSignals makes every signal after the first one only be
	// logged: the drain always runs its full serve period and shutdown. By
	// default a second signal skips the rest of the serve period and a third
	// one stops the server at once.
	IgnoreRepeatedSignals bool

	// Logger receives one line when the drain starts, when the serve period
	// ends, on repeated signals and when the shutdown completes or times out.
	// Default slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c validated and with every zero field set to its
// default. serverIdle is the http.Server's IdleTimeout before New touches it.
// Errors wrap ErrInvalidConfig and name the field and the fix.
func (c Config) withDefaults(serverIdle time.Duration) (Config, error) {
	if c.HealthPath == "" {
		c.HealthPath = DefaultHealthPath
	}
	if !strings.HasPrefix(c.HealthPath, "/") {
		return c, fmt.Errorf("%w: HealthPath %q must start with \"/\" (e.g. %q)", ErrInvalidConfig, c.HealthPath, DefaultHealthPath)
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"ServePeriod", c.ServePeriod},
		{"ShutdownTimeout", c.ShutdownTimeout},
		{"IdleTimeout", c.IdleTimeout},
	} {
		if f.v < 0 {
			return c, fmt.Errorf("%w: %s is %s; it must be positive, or zero for the default", ErrInvalidConfig, f.name, f.v)
		}
	}
	if c.ServePeriod == 0 {
		c.ServePeriod = DefaultServePeriod
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = serverIdle
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.NoSignals && len(c.Signals) > 0 {
		return c, fmt.Errorf("%w: NoSignals is set and Signals lists %v; set one or the other", ErrInvalidConfig, c.Signals)
	}
	if !c.NoSignals && len(c.Signals) == 0 {
		c.Signals = []os.Signal{syscall.SIGTERM, os.Interrupt}
	}
	for i, s := range c.Signals {
		if s == nil {
			return c, fmt.Errorf("%w: Signals[%d] is nil; list real signals such as syscall.SIGTERM", ErrInvalidConfig, i)
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

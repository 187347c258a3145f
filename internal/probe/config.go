package probe

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrInvalidConfig is matched (errors.Is) by every error New returns for a bad
// Config. The message names the field and the fix.
var ErrInvalidConfig = errors.New("invalid probe config")

// Defaults and limits of Config.
const (
	// DefaultTimeout is Config.Timeout's default.
	DefaultTimeout = 2 * time.Second
	// DefaultLateTolerance is Config.LateTolerance's default.
	DefaultLateTolerance = time.Millisecond
	// DefaultHealthPath is Config.HealthPath's default, the sample app's.
	DefaultHealthPath = "/healthz"
	// MaxRate is the highest Config.Rate accepted, in requests per second.
	MaxRate = 100_000
	// MaxInFlightCap caps the derived default of Config.MaxInFlight.
	MaxInFlightCap = 10_000
)

// Config says what to probe and how hard. The zero value of every optional
// field means its default; defaults are applied in one place (withDefaults).
type Config struct {
	// URL is the absolute http:// or https:// URL every request goes to.
	// Required.
	URL string
	// Method is GET (default) or HEAD; only idempotent, body-less methods,
	// because the prober repeats the same request thousands of times.
	Method string
	// Rate is the number of requests per second, > 0 and ≤ MaxRate (fractions
	// allowed: 0.5 is one request every 2 s). Required.
	Rate float64
	// Duration is how long to send for; requests are due at start + i/Rate for
	// every i with i/Rate < Duration. 0 (default) sends until Stop is called or
	// Start's context ends.
	Duration time.Duration
	// Timeout bounds each request, from send to the last body byte. A request
	// that takes longer reached nothing (ReasonTimeout). Default 2 s.
	Timeout time.Duration
	// MaxInFlight bounds requests in flight at once. A request due while the
	// bound is reached is not sent and is counted as unsent (Report.Unsent),
	// never silently dropped. Default ⌈Rate × Timeout × 1.2⌉ + 16, at most
	// MaxInFlightCap: enough that a target answering within Timeout never hits it.
	MaxInFlight int
	// LateTolerance is how far behind its due time a send may leave before it
	// counts as late (Report.LateSends). Default 1 ms.
	LateTolerance time.Duration
	// HealthPath is the target's health path. When URL's path equals it, a 503
	// is the drain signal (ClassDrainSignal) rather than an app error. Default
	// "/healthz" (the sample app's).
	HealthPath string
	// UserAgent is sent with every request. Default "mythex-measure".
	UserAgent string
}

// withDefaults returns c with every unset optional field at its default.
func (c Config) withDefaults() Config {
	if c.Method == "" {
		c.Method = http.MethodGet
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.LateTolerance == 0 {
		c.LateTolerance = DefaultLateTolerance
	}
	if c.HealthPath == "" {
		c.HealthPath = DefaultHealthPath
	}
	if c.UserAgent == "" {
		c.UserAgent = "mythex-measure"
	}
	if c.MaxInFlight == 0 && c.Rate > 0 && c.Rate <= MaxRate && c.Timeout > 0 {
		c.MaxInFlight = DefaultMaxInFlight(c.Rate, c.Timeout)
	}
	return c
}

// DefaultMaxInFlight is the in-flight bound used when Config.MaxInFlight is 0:
// ⌈rate × timeout × 1.2⌉ + 16 (every request ends within timeout, so at most
// rate × timeout are in flight; 20 % and 16 of head room), at most
// MaxInFlightCap.
func DefaultMaxInFlight(rate float64, timeout time.Duration) int {
	n := math.Ceil(rate*timeout.Seconds()*1.2) + 16
	if n > MaxInFlightCap {
		return MaxInFlightCap
	}
	return int(n)
}

// validate checks a Config after withDefaults and returns ErrInvalidConfig
// errors naming each bad field; it returns the parsed URL when all is well.
func (c Config) validate() (*url.URL, error) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...)))
	}
	var u *url.URL
	if c.URL == "" {
		bad("url", "required: give the absolute URL to probe, e.g. http://127.0.0.1:8080/")
	} else if !strings.Contains(c.URL, "://") {
		bad("url", "%q has no http:// or https://: give the scheme too, e.g. http://%s", c.URL, strings.TrimPrefix(c.URL, "//"))
	} else if p, err := url.Parse(c.URL); err != nil {
		bad("url", "cannot parse %q: %v", c.URL, err)
	} else if p.Scheme != "http" && p.Scheme != "https" {
		bad("url", "%q: scheme must be http or https", c.URL)
	} else if p.Host == "" {
		bad("url", "%q has no host: give host:port, e.g. http://127.0.0.1:8080/", c.URL)
	} else {
		u = p
	}
	if c.Method != http.MethodGet && c.Method != http.MethodHead {
		bad("method", "%q: use GET or HEAD (the prober repeats requests, so they must be idempotent and body-less)", c.Method)
	}
	if !(c.Rate > 0) || c.Rate > MaxRate || math.IsInf(c.Rate, 0) {
		bad("rate", "%v requests per second: must be > 0 and ≤ %d", c.Rate, MaxRate)
	}
	if c.Duration < 0 {
		bad("duration", "%v is negative: give how long to send, or 0 to send until stopped", c.Duration)
	}
	if c.Timeout < 0 {
		bad("timeout", "%v is negative: give the per-request time limit, e.g. 2s", c.Timeout)
	}
	if c.MaxInFlight < 0 {
		bad("max_in_flight", "%d is negative: give the in-flight bound, or 0 for the default", c.MaxInFlight)
	}
	if c.LateTolerance < 0 {
		bad("late_tolerance", "%v is negative: give how late a send may be before it counts as late, e.g. 1ms", c.LateTolerance)
	}
	if c.HealthPath != "" && c.HealthPath[0] != '/' {
		bad("health_path", "%q must start with /", c.HealthPath)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return u, nil
}

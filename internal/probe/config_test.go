package probe

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestNew_InvalidConfig(t *testing.T) {
	cases := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no url", Config{Rate: 1}, "url:"},
		{"relative url", Config{URL: "/healthz", Rate: 1}, "url:"},
		{"ftp scheme", Config{URL: "ftp://h/", Rate: 1}, "scheme must be http or https"},
		{"host:port without a scheme", Config{URL: "127.0.0.1:9101", Rate: 1}, "give the scheme too, e.g. http://127.0.0.1:9101"},
		{"no host", Config{URL: "http:///x", Rate: 1}, "has no host"},
		{"unparsable url", Config{URL: "http://[::1", Rate: 1}, "cannot parse"},
		{"zero rate", Config{URL: "http://h/"}, "rate:"},
		{"negative rate", Config{URL: "http://h/", Rate: -5}, "rate:"},
		{"rate too high", Config{URL: "http://h/", Rate: MaxRate + 1}, "rate:"},
		{"POST", Config{URL: "http://h/", Rate: 1, Method: "POST"}, "method:"},
		{"negative duration", Config{URL: "http://h/", Rate: 1, Duration: -time.Second}, "duration:"},
		{"negative timeout", Config{URL: "http://h/", Rate: 1, Timeout: -time.Second}, "timeout:"},
		{"negative in-flight bound", Config{URL: "http://h/", Rate: 1, MaxInFlight: -1}, "max_in_flight:"},
		{"negative late tolerance", Config{URL: "http://h/", Rate: 1, LateTolerance: -1}, "late_tolerance:"},
		{"health path without slash", Config{URL: "http://h/", Rate: 1, HealthPath: "healthz"}, "health_path:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(tc.cfg, Deps{})
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New() = %v, %v; want ErrInvalidConfig", p, err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %q", err, tc.field)
			}
		})
	}
}

func TestConfig_WithDefaults(t *testing.T) {
	c := Config{URL: "http://h/", Rate: 500}.withDefaults()
	want := Config{URL: "http://h/", Rate: 500, Method: "GET", Timeout: 2 * time.Second,
		LateTolerance: time.Millisecond, HealthPath: "/healthz", UserAgent: "mythex-measure", MaxInFlight: 1216}
	if c != want {
		t.Errorf("withDefaults() = %+v\nwant %+v", c, want)
	}
	kept := Config{URL: "http://h/", Rate: 1, Method: "HEAD", Timeout: time.Second, LateTolerance: 5 * time.Millisecond,
		HealthPath: "/up", UserAgent: "x", MaxInFlight: 3}
	if got := kept.withDefaults(); got != kept {
		t.Errorf("withDefaults() changed set fields: %+v", got)
	}
}

func TestDefaultMaxInFlight(t *testing.T) {
	cases := []struct {
		name    string
		rate    float64
		timeout time.Duration
		want    int
	}{
		{"500/s, 2s", 500, 2 * time.Second, 1216},
		{"1/s, 2s keeps head room", 1, 2 * time.Second, 19},
		{"5000/s, 2s is capped", 5000, 2 * time.Second, MaxInFlightCap},
		{"0.1/s", 0.1, time.Second, 17},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := DefaultMaxInFlight(tc.rate, tc.timeout); got != tc.want {
				t.Errorf("DefaultMaxInFlight(%v, %v) = %d, want %d", tc.rate, tc.timeout, got, tc.want)
			}
		})
	}
}

func TestNew_HealthPathDetection(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want bool
	}{
		{"default health path", Config{URL: "http://h:1/healthz", Rate: 1}, true},
		{"query does not matter", Config{URL: "http://h:1/healthz?x=1", Rate: 1}, true},
		{"other path", Config{URL: "http://h:1/", Rate: 1}, false},
		{"custom health path", Config{URL: "http://h:1/up", Rate: 1, HealthPath: "/up"}, true},
		{"custom health path, other url", Config{URL: "http://h:1/healthz", Rate: 1, HealthPath: "/up"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(tc.cfg, Deps{})
			if err != nil {
				t.Fatal(err)
			}
			if p.healthPath != tc.want {
				t.Errorf("healthPath = %v, want %v", p.healthPath, tc.want)
			}
		})
	}
}

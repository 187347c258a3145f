package lb

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func TestHTTPHealthChecker_Check(t *testing.T) {
	var mu sync.Mutex
	var gotUA string
	var gotClose bool
	addr := backendAddr(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotUA, gotClose = r.UserAgent(), r.Close
		mu.Unlock()
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte("ok"))
		case "/draining":
			http.Error(w, "draining", http.StatusServiceUnavailable)
		case "/moved":
			http.Redirect(w, r, "/ok", http.StatusMovedPermanently)
		case "/hang":
			<-r.Context().Done()
		}
	}))
	tests := []struct {
		name        string
		addr, path  string
		timeout     time.Duration
		wantOutcome CheckOutcome
		wantStatus  int
		wantReason  Reason
	}{
		{"200 passes", addr, "/ok", time.Second, CheckPassed, 200, ReasonNone},
		{"503 is a code mismatch", addr, "/draining", time.Second, CheckCodeMismatch, 503, ReasonResponseCodeMismatch},
		{"a redirect is not followed", addr, "/moved", time.Second, CheckCodeMismatch, 301, ReasonResponseCodeMismatch},
		{"no answer in time is a timeout", addr, "/hang", 100 * time.Millisecond, CheckTimedOut, 0, ReasonTimeout},
		{"refused connection fails the check", closedAddr(t), "/ok", time.Second, CheckConnFailed, 0, ReasonFailedHealthChecks},
		{"an address that cannot make a request is an internal error", "bad host:1", "/ok", time.Second, CheckInternalError, 0, ReasonInternalError},
	}
	p := NewHTTPHealthChecker()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			r := p.Check(ctx, tt.addr, tt.path)
			if r.Outcome != tt.wantOutcome || r.Status != tt.wantStatus || r.Reason() != tt.wantReason {
				t.Fatalf("Check = %s %d (%s) %q; want %s %d (%s)", r.Outcome, r.Status, r.Reason(), r.Err, tt.wantOutcome, tt.wantStatus, tt.wantReason)
			}
			if (r.Err == "") != r.Passed() {
				t.Fatalf("Err = %q with outcome %s: a failed check must say why, a passed one nothing", r.Err, r.Outcome)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if gotUA != healthCheckUserAgent || !gotClose {
		t.Errorf("checks sent User-Agent %q close=%v; want %q and a closed connection (as an ALB)", gotUA, gotClose, healthCheckUserAgent)
	}
}

type panicChecker struct{}

func (panicChecker) Check(context.Context, string, string) CheckResult { panic("boom") }

func TestChecker_RunOnce(t *testing.T) {
	clock := clockwork.NewFakeClock()
	t.Run("a panicking health checker counts as an internal error", func(t *testing.T) {
		c := &checker{clock: clock, log: discardLogger(), hc: panicChecker{}, address: addrA, path: "/", interval: 5 * time.Second, timeout: time.Second}
		r, ok := c.runOnce(context.Background())
		if !ok || r.Outcome != CheckInternalError || r.Reason() != ReasonInternalError {
			t.Fatalf("runOnce = %+v, %v; want an internal error, reported", r, ok)
		}
	})
	t.Run("a check cut short by stopping is not reported", func(t *testing.T) {
		f := newFakeChecker()
		f.set(addrA, modeHang)
		c := &checker{clock: clock, log: discardLogger(), hc: f, address: addrA, path: "/", interval: 5 * time.Second, timeout: time.Second}
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-f.started; cancel() }()
		if _, ok := c.runOnce(ctx); ok {
			t.Fatal("runOnce reported a check interrupted by stopping")
		}
	})
	t.Run("duration and start come from the clock", func(t *testing.T) {
		f := newFakeChecker()
		f.set(addrA, modeHang)
		c := &checker{clock: clock, log: discardLogger(), hc: f, address: addrA, path: "/", interval: 5 * time.Second, timeout: 2 * time.Second}
		start := clock.Now()
		go func() { <-f.started; clock.Advance(2 * time.Second) }()
		r, ok := c.runOnce(context.Background())
		if !ok || r.Outcome != CheckTimedOut || r.Duration != 2*time.Second || !r.At.Equal(start) {
			t.Fatalf("runOnce = %+v, %v; want a timeout of exactly 2s started at %v", r, ok, start)
		}
	})
}

func TestCheckOutcome_String(t *testing.T) {
	if CheckCodeMismatch.String() != "code_mismatch" || CheckOutcome(42).String() != "CheckOutcome(42)" {
		t.Fatalf("names: %s %s", CheckCodeMismatch, CheckOutcome(42))
	}
}

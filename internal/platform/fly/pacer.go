package fly

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/time/rate"
)

// Documented Machines API rate limits (fly.io/docs/machines/api/
// working-with-machines-api, "Rate limits"): actions on a machine 1 request
// per second per action per machine with bursts of 3; reads (get, list,
// wait) 5 per second with bursts of 10.
const (
	ActionRate  = rate.Limit(1)
	ActionBurst = 3
	ReadRate    = rate.Limit(5)
	ReadBurst   = 10
)

// pacer keeps a client under the documented limits: one token bucket per
// (action, machine) for writes, one per app for reads, on the client's
// clock. A request waits for its token instead of drawing a 429.
type pacer struct {
	clock clockwork.Clock
	off   bool

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

func newPacer(clock clockwork.Clock, off bool) *pacer {
	return &pacer{clock: clock, off: off, buckets: map[string]*rate.Limiter{}}
}

// key names the bucket of a request: "read <app>" for GETs, else
// "<METHOD> <action> <machine>" (action "update" for POST .../{id}).
func paceKey(method, path string) (key string, read bool) {
	// /v1/apps/{app}/machines[/{id}[/{action}]]
	parts := strings.Split(strings.Trim(path, "/"), "/")
	app, id, action := "", "", ""
	if len(parts) > 2 {
		app = parts[2]
	}
	if len(parts) > 4 {
		id = parts[4]
	}
	if len(parts) > 5 {
		action = parts[5]
	}
	if method == http.MethodGet {
		return "read " + app, true
	}
	switch {
	case id == "":
		action = "create"
	case action == "" && method == http.MethodPost:
		action = "update"
	case action == "" && method == http.MethodDelete:
		action = "destroy"
	}
	return method + " " + action + " " + app + "/" + id, false
}

// wait blocks until the request may be sent, or ctx ends.
func (p *pacer) wait(ctx context.Context, method, path string) error {
	if p.off {
		return nil
	}
	key, read := paceKey(method, path)
	p.mu.Lock()
	l := p.buckets[key]
	if l == nil {
		if read {
			l = rate.NewLimiter(ReadRate, ReadBurst)
		} else {
			l = rate.NewLimiter(ActionRate, ActionBurst)
		}
		p.buckets[key] = l
	}
	r := l.ReserveN(p.clock.Now(), 1)
	d := r.DelayFrom(p.clock.Now())
	p.mu.Unlock()
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		r.CancelAt(p.clock.Now())
		return ctx.Err()
	case <-p.clock.After(d):
		return nil
	}
}

// backoff429 is how long to wait after a 429: at least one refill of the
// bucket (1 s), doubling per attempt, whatever Retry-After says (a
// Retry-After of 0 is not a promise), and Retry-After when it is longer;
// capped at max.
func backoff429(attempt int, retryAfter, max time.Duration) time.Duration {
	d := time.Second << min(attempt, 6)
	d =
		maxDur(d, retryAfter)
	return min(d, max)
}

func maxDur(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

package fly

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// fakeFly is an httptest server speaking the Machines API the way Fly does,
// written from the API docs and fly-go's JSON tags (not from our own types):
// machines move created -> started after bootDelay on a fake clock, an image
// whose name contains "crash" exits 2 s after every start and is restarted
// (restart policy always) 200 ms later, the event list keeps the newest five,
// and the server can answer 429 or stall on demand.
type fakeFly struct {
	t     *testing.T
	srv   *httptest.Server
	clock *clockwork.FakeClock
	token string

	mu        sync.Mutex
	machines  map[string]*fakeMachine
	seq       int
	rateLimit int // the next rateLimit requests get 429
	// stormAfterUpdate: once a machine is updated, every later GET of a
	// machine gets 429 (the API rate-limited while the deploy polls).
	stormAfterUpdate, storm bool
	stall                   time.Duration // every request waits this long (real time) first
	requests                []string      // "METHOD path?query"
	bodies                  []map[string]any
}

type fakeMachine struct {
	id        string
	state     string
	config    map[string]any
	created   time.Time
	instance  int
	events    []map[string]any // newest first
	nextAt    time.Time
	restarts  int
	destroyed bool
}

const bootDelay = time.Second

func newFakeFly(t *testing.T) *fakeFly {
	f := &fakeFly{t: t, clock: clockwork.NewFakeClockAt(time.Date(2025, 9, 25, 12, 0, 0, 0, time.UTC)), token: "secret",
		machines: map[string]*fakeMachine{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeFly) event(m *fakeMachine, typ, status, source string, at time.Time, req map[string]any) {
	e := map[string]any{"id": fmt.Sprintf("ev%d", at.UnixNano()), "type": typ, "status": status, "source": source, "timestamp": at.UnixMilli()}
	if req != nil {
		e["request"] = req
	}
	m.events = append([]map[string]any{e}, m.events...)
	if len(m.events) > 5 {
		m.events = m.events[:5]
	}
}

func (f *fakeFly) crashes(m *fakeMachine) bool {
	img, _ := m.config["image"].(string)
	return strings.Contains(img, "crash")
}

// advance runs m's transitions up to now.
func (f *fakeFly) advance(m *fakeMachine) {
	now := f.clock.Now()
	for !m.nextAt.IsZero() && !m.nextAt.After(now) {
		at := m.nextAt
		switch m.state {
		case "created", "starting":
			m.state = "started"
			f.event(m, "start", "started", "flyd", at, nil)
			m.nextAt = time.Time{}
			if f.crashes(m) {
				m.nextAt = at.Add(2 * time.Second)
			}
		case "started":
			m.restarts++
			f.event(m, "exit", "stopped", "flyd", at, map[string]any{
				"exit_event":    map[string]any{"exit_code": 1, "oom_killed": false, "requested_stop": false, "restarting": true, "exited_at": at.Format(time.RFC3339Nano)},
				"restart_count": m.restarts,
			})
			m.state = "starting"
			m.nextAt = at.Add(200 * time.Millisecond)
		}
	}
}

func (f *fakeFly) json(m *fakeMachine) map[string]any {
	img, _ := m.config["image"].(string)
	repo, tag, _ := strings.Cut(strings.TrimPrefix(img, "registry.fly.io/"), ":")
	return map[string]any{
		"id": m.id, "name": "api-" + m.id, "state": m.state, "region": "ams",
		"image_ref":   map[string]any{"registry": "registry.fly.io", "repository": repo, "tag": tag, "digest": "sha256:abc", "labels": map[string]string{}},
		"instance_id": fmt.Sprintf("01HINST%d", m.instance), "private_ip": "fdaa:0:1:a7b:1::2",
		"created_at": m.created.Format(time.RFC3339), "updated_at": f.clock.Now().Format(time.RFC3339),
		"config": m.config, "events": m.events, "checks": []any{}, "nonce": "", "host_status": "ok", "cordoned": false,
	}
}

func (f *fakeFly) write(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeFly) serve(w http.ResponseWriter, r *http.Request) {
	if f.stall > 0 {
		select {
		case <-time.After(f.stall):
		case <-r.Context().Done():
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		f.write(w, 401, map[string]string{"error": "You must be authenticated to view this."})
		return
	}
	if f.storm && r.Method == http.MethodGet {
		w.Header().Set("Retry-After", "1")
		f.write(w, 429, map[string]string{"error": "rate limit exceeded"})
		return
	}
	if f.rateLimit > 0 {
		f.rateLimit--
		w.Header().Set("Retry-After", "0")
		f.write(w, 429, map[string]string{"error": "rate limit exceeded"})
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/") // v1 apps APP machines [ID [ACTION]]
	if len(parts) < 4 || parts[0] != "v1" || parts[1] != "apps" || parts[3] != "machines" {
		f.write(w, 404, map[string]string{"error": "not found"})
		return
	}
	var body map[string]any
	if r.Body != nil && (r.Method == http.MethodPost) {
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.bodies = append(f.bodies, body)
	}
	if len(parts) == 4 {
		switch r.Method {
		case http.MethodGet:
			out := []any{}
			for i := 1; i <= f.seq; i++ {
				if m := f.machines[fmt.Sprintf("m%d", i)]; m != nil && !m.destroyed {
					f.advance(m)
					out = append(out, f.json(m))
				}
			}
			f.write(w, 200, out)
		case http.MethodPost:
			cfg, _ := body["config"].(map[string]any)
			if img, _ := cfg["image"].(string); img == "" {
				f.write(w, 422, map[string]string{"error": "image is required"})
				return
			}
			f.seq++
			m := &fakeMachine{id: fmt.Sprintf("m%d", f.seq), state: "created", config: cfg, created: f.clock.Now(), instance: 1}
			f.event(m, "launch", "created", "user", f.clock.Now(), nil)
			m.nextAt = f.clock.Now().Add(bootDelay)
			f.machines[m.id] = m
			f.write(w, 200, f.json(m))
		}
		return
	}
	m := f.machines[parts[4]]
	if m == nil || m.destroyed {
		f.write(w, 404, map[string]string{"error": "machine not found"})
		return
	}
	f.advance(m)
	action := ""
	if len(parts) > 5 {
		action = parts[5]
	}
	now := f.clock.Now()
	switch {
	case r.Method == http.MethodGet && action == "":
		f.write(w, 200, f.json(m))
	case r.Method == http.MethodPost && action == "":
		cfg, _ := body["config"].(map[string]any)
		m.config = cfg
		m.instance++
		f.storm = f.stormAfterUpdate
		m.restarts = 0
		if m.state == "started" {
			f.event(m, "exit", "stopped", "user", now, map[string]any{"exit_event": map[string]any{"exit_code": 0, "requested_stop": true, "signal": 15}})
		}
		f.event(m, "update", "replacing", "user", now, nil)
		m.state, m.nextAt = "starting", now.Add(bootDelay)
		f.write(w, 200, f.json(m))
	case r.Method == http.MethodPost && action == "stop":
		if m.state == "started" {
			f.event(m, "exit", "stopped", "user", now, map[string]any{"exit_event": map[string]any{"exit_code": 0, "requested_stop": true, "signal": 15}})
		}
		m.state, m.nextAt = "stopped", time.Time{}
		f.write(w, 200, map[string]bool{"ok": true})
	case r.Method == http.MethodPost && action == "start":
		if m.state != "stopped" {
			f.write(w, 412, map[string]string{"error": "unable to start machine from current state: '" + m.state + "'"})
			return
		}
		m.state, m.nextAt = "starting", now.Add(bootDelay)
		f.write(w, 200, map[string]any{"previous_state": "stopped"})
	case r.Method == http.MethodDelete && action == "":
		if r.URL.Query().Get("force") != "true" && m.state == "started" {
			f.write(w, 412, map[string]string{"error": "machine is started; stop it or use force"})
			return
		}
		m.destroyed = true
		f.write(w, 200, map[string]bool{"ok": true})
	case r.Method == http.MethodGet && action == "wait":
		want := r.URL.Query().Get("state")
		if _, err := strconv.Atoi(r.URL.Query().Get("timeout")); err != nil {
			f.write(w, 400, map[string]string{"error": "bad timeout"})
			return
		}
		if m.state == want {
			f.write(w, 200, map[string]bool{"ok": true})
			return
		}
		f.write(w, 408, map[string]string{"error": "deadline_exceeded: machine did not reach " + want})
	default:
		f.write(w, 404, map[string]string{"error": "not found"})
	}
}

func (f *fakeFly) client(t *testing.T, opts Options) *Client {
	t.Helper()
	opts.BaseURL, opts.Token = f.srv.URL, f.token
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fakeFly) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

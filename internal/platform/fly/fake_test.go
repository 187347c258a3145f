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
	"golang.org/x/time/rate"
)

// fakeFly is an httptest server speaking the Machines API the way Fly does,
// written from the public sources (not from our own types): fly-go's
// machine_types.go JSON tags and flaps client, flyctl's deploy code, the
// Machines API reference (fly.io/docs/machines/api) and the machine-states
// page. Each behaviour below names its source. It runs on a fake clock; the
// switches let a test make it do what the real API can: skewed timestamps,
// leases held by others, 409/408/429 on any endpoint, slow and long
// updates, autostop, signal -1, integer exited_at, a host that cannot give
// a machine's config, release-command machines, and the documented rate
// limits.
type fakeFly struct {
	t     *testing.T
	srv   *httptest.Server
	clock *clockwork.FakeClock
	token string

	mu       sync.Mutex
	machines map[string]*fakeMachine
	seq      int

	// Switches.
	skew      time.Duration // every timestamp the API reports is off by this
	rateLimit int           // the next rateLimit requests get 429 with Retry-After: 0
	// faults: the next n requests whose "METHOD action" matches get code.
	faults []fakeFault
	// stormAfterUpdate: once a machine is updated, every later GET gets 429
	// (the API rate-limited while the deploy polls).
	stormAfterUpdate, storm bool
	stall                   time.Duration // every request waits this long (real time) first
	// slowAnswer: a request of this kind is carried out at once but
	// answered only after the delay (real time) — a call that outlives the
	// caller's timeout although the platform did the work.
	slowAnswer map[string]time.Duration
	// limits: enforce the documented rate limits with 429 (Machines API
	// docs, "Rate limits": 1 req/s per action per machine, burst 3; reads
	// 5 req/s, burst 10).
	limits      bool
	overLimits  int // requests refused for going over them
	buckets     map[string]*rate.Limiter
	updatingFor time.Duration // an update leaves the machine "updating" this long (machine-states: updating can take minutes)
	autostop    time.Duration // Fly Proxy stops a started, healthy machine after this long idle (0: never)
	signalNone  bool          // exits without a signal carry "signal": -1, as flyd reports them
	intExitedAt bool          // exited_at as integer milliseconds (older samples) instead of RFC 3339
	maxEvents   int           // events kept per machine (default 5; the API does not document it)

	paced    *Client  // the paced client flyRun drives the gate with
	requests []string // "METHOD path?query"
	bodies   []map[string]any
	nonces   []string // fly-machine-lease-nonce of each write
}

// fakeFault makes the next n requests matching match ("POST update",
// "GET read", "POST lease", ...; "" any) answer code.
type fakeFault struct {
	match string
	code  int
	n     int
}

type fakeMachine struct {
	id        string
	state     string
	config    map[string]any
	created   time.Time
	instance  int
	events    []map[string]any // newest first
	nextAt    time.Time
	started   time.Time
	restarts  int
	destroyed bool
	pending   map[string]any // the config an update in "updating" lands
	hostDown  bool           // host_status unreachable: only incomplete_config
	lease     *fakeLease
	cordoned  bool
}

type fakeLease struct {
	nonce, owner string
	until        time.Time
}

const bootDelay = time.Second

func newFakeFly(t *testing.T) *fakeFly {
	f := &fakeFly{t: t, clock: clockwork.NewFakeClockAt(time.Date(2025, 9, 25, 12, 0, 0, 0, time.UTC)), token: "secret",
		machines: map[string]*fakeMachine{}, maxEvents: 5, buckets: map[string]*rate.Limiter{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// event records an event, newest first, keeping maxEvents (the list is
// bounded; its size is not documented).
func (f *fakeFly) event(m *fakeMachine, typ, status, source string, at time.Time, req map[string]any) {
	e := map[string]any{"id": fmt.Sprintf("ev%d", at.UnixNano()), "type": typ, "status": status, "source": source, "timestamp": at.Add(f.skew).UnixMilli()}
	if req != nil {
		e["request"] = req
	}
	m.events = append([]map[string]any{e}, m.events...)
	if len(m.events) > f.maxEvents {
		m.events = m.events[:f.maxEvents]
	}
}

// exitEvent is request.exit_event as fly-go's MachineExitEvent: exit_code,
// oom_killed, requested_stop, restarting, signal, exited_at.
func (f *fakeFly) exitEvent(code, signal int, requested, restarting bool, at time.Time) map[string]any {
	if signal == 0 && f.signalNone {
		signal = -1
	}
	x := map[string]any{"exit_code": code, "oom_killed": false, "requested_stop": requested, "restarting": restarting, "signal": signal}
	if f.intExitedAt {
		x["exited_at"] = at.Add(f.skew).UnixMilli()
	} else {
		x["exited_at"] = at.Add(f.skew).Format(time.RFC3339Nano)
	}
	return x
}

func (f *fakeFly) image(m *fakeMachine) string {
	img, _ := m.config["image"].(string)
	return img
}

// crashes: an image whose name contains "crash" exits 1 two seconds after
// every start; "exit0" exits 0 the same way.
func (f *fakeFly) crashes(m *fakeMachine) bool {
	img := f.image(m)
	return strings.Contains(img, "crash") || strings.Contains(img, "exit0")
}

// restartPolicy reads config.restart (fly-go MachineRestart): policy no,
// always or on-failure (the default) with max_retries (default 10).
func restartPolicy(cfg map[string]any) (string, int) {
	r, _ := cfg["restart"].(map[string]any)
	policy, _ := r["policy"].(string)
	max, _ := r["max_retries"].(float64)
	if policy == "" {
		policy = "on-failure"
	}
	if max == 0 {
		max = 10
	}
	return policy, int(max)
}

// advance runs m's transitions up to now.
func (f *fakeFly) advance(m *fakeMachine) {
	now := f.clock.Now()
	if f.autostop > 0 && m.state == "started" && m.nextAt.IsZero() && !now.Before(m.started.Add(f.autostop)) {
		// Fly Proxy autostop: the machine is stopped for the platform (the
		// exit is a requested stop, from flyd, not the user).
		at := m.started.Add(f.autostop)
		f.event(m, "exit", "stopped", "flyd", at, map[string]any{"exit_event": f.exitEvent(0, 15, true, false, at)})
		m.state = "stopped"
	}
	for !m.nextAt.IsZero() && !m.nextAt.After(now) {
		at := m.nextAt
		switch m.state {
		case "created", "starting":
			m.state, m.started = "started", at
			f.event(m, "start", "started", "flyd", at, nil)
			m.nextAt = time.Time{}
			if f.crashes(m) {
				m.nextAt = at.Add(2 * time.Second)
			}
		case "started":
			// The restart policy is honoured, giving up included
			// (fly.io/docs/machines/guides-examples/machine-restart-policy).
			code := 1
			if strings.Contains(f.image(m), "exit0") {
				code = 0
			}
			policy, max := restartPolicy(m.config)
			restart := policy == "always" || (policy == "on-failure" && code != 0 && m.restarts < max)
			if restart {
				m.restarts++
			}
			f.event(m, "exit", "stopped", "flyd", at, map[string]any{"exit_event": f.exitEvent(code, 0, false, restart, at), "restart_count": m.restarts})
			if restart {
				m.state, m.nextAt = "starting", at.Add(200*time.Millisecond)
			} else {
				m.state, m.nextAt = "stopped", time.Time{}
			}
		case "updating":
			// The update lands: the old instance stops, the new one starts.
			f.replace(m, at, m.pending, false)
		default:
			m.nextAt = time.Time{}
		}
	}
}

// replace puts cfg on m as a new instance at t (an update).
func (f *fakeFly) replace(m *fakeMachine, t time.Time, cfg map[string]any, skipLaunch bool) {
	if m.state == "started" || m.state == "updating" {
		f.event(m, "exit", "stopped", "user", t, map[string]any{"exit_event": f.exitEvent(0, 15, true, false, t)})
	}
	m.config, m.pending = cfg, nil
	m.instance++
	m.restarts = 0
	f.event(m, "update", "replacing", "user", t, nil)
	if skipLaunch {
		m.state, m.nextAt = "stopped", time.Time{}
		return
	}
	m.state, m.nextAt = "starting", t.Add(bootDelay)
}

func (f *fakeFly) instanceID(m *fakeMachine) string { return fmt.Sprintf("01HINST%d", m.instance) }

func (f *fakeFly) json(m *fakeMachine) map[string]any {
	img := f.image(m)
	repo, tag, _ := strings.Cut(strings.TrimPrefix(img, "registry.fly.io/"), ":")
	out := map[string]any{
		"id": m.id, "name": "api-" + m.id, "state": m.state, "region": "ams",
		"image_ref":   map[string]any{"registry": "registry.fly.io", "repository": repo, "tag": tag, "digest": "sha256:abc", "labels": map[string]string{}},
		"instance_id": f.instanceID(m), "version": f.instanceID(m), "private_ip": "fdaa:0:1:a7b:1::2",
		"created_at": m.created.Add(f.skew).Format(time.RFC3339), "updated_at": f.clock.Now().Add(f.skew).Format(time.RFC3339),
		"config": m.config, "events": m.events, "checks": f.checks(m), "nonce": "", "host_status": "ok", "cordoned": m.cordoned,
	}
	if m.hostDown {
		// fly-go machine_types.go: when host_status isn't "ok" the config
		// can't be fully retrieved; only a partial incomplete_config.
		delete(out, "config")
		out["host_status"] = "unreachable"
		out["incomplete_config"] = map[string]any{"image": img, "metadata": m.config["metadata"]}
	}
	return out
}

// checks is checks[] (fly-go MachineCheckStatus): the machine's service
// check passes while it is started and runs an image that serves.
func (f *fakeFly) checks(m *fakeMachine) []any {
	status, out := "critical", "connection refused"
	if m.state == "started" && !f.crashes(m) {
		status, out = "passing", "200 OK"
	}
	return []any{map[string]any{"name": "servicecheck-00-http-8080", "status": status, "output": out}}
}

func (f *fakeFly) write(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// kind is a request's "METHOD action" for faults and limits: "GET read",
// "POST update", "POST lease", "POST create", "DELETE destroy", ...
func kind(method, path string) string {
	key, read := paceKey(method, path)
	if read {
		return "GET read"
	}
	return strings.Join(strings.Fields(key)[:2], " ")
}

// overLimit applies the documented rate limits on the fake clock.
func (f *fakeFly) overLimit(method, path string) bool {
	key, read := paceKey(method, path)
	l := f.buckets[key]
	if l == nil {
		if read {
			l = rate.NewLimiter(ReadRate, ReadBurst)
		} else {
			l = rate.NewLimiter(ActionRate, ActionBurst)
		}
		f.buckets[key] = l
	}
	return !l.AllowN(f.clock.Now(), 1)
}

// holdLease makes owner hold machine id's lease for d (flyctl or Fly
// itself in the middle of something).
func (f *fakeFly) holdLease(id, owner string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.machines[id].lease = &fakeLease{nonce: "theirs", owner: owner, until: f.clock.Now().Add(d)}
}

// addMachine adds a machine of another process group (a release command's
// or a console's), stopped, as flyctl leaves them.
func (f *fakeFly) addMachine(group string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	m := &fakeMachine{id: fmt.Sprintf("m%d", f.seq), state: "stopped", created: f.clock.Now(), instance: 1,
		config: map[string]any{"image": "registry.fly.io/api:release", "metadata": map[string]any{"fly_process_group": group}}}
	f.machines[m.id] = m
	return m.id
}

func (f *fakeFly) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	delay := f.slowAnswer[kind(r.Method, r.URL.Path)]
	f.mu.Unlock()
	if delay <= 0 {
		f.serveNow(w, r)
		return
	}
	rec := httptest.NewRecorder()
	f.serveNow(rec, r)
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func (f *fakeFly) serveNow(w http.ResponseWriter, r *http.Request) {
	if f.stall > 0 {
		select {
		case <-time.After(f.stall):
		case <-r.Context().Done():
			return
		}
	}
	f.mu.Lock()
	locked := true
	defer func() {
		if locked {
			f.mu.Unlock()
		}
	}()
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
	k := kind(r.Method, r.URL.Path)
	for i := range f.faults {
		if ft := &f.faults[i]; ft.n > 0 && (ft.match == "" || ft.match == k) {
			ft.n--
			msg := map[int]string{408: "deadline_exceeded", 409: "conflict", 429: "rate limit exceeded"}[ft.code]
			w.Header().Set("Retry-After", "0")
			f.write(w, ft.code, map[string]string{"error": msg})
			return
		}
	}
	if f.limits && f.overLimit(r.Method, r.URL.Path) {
		f.overLimits++
		w.Header().Set("Retry-After", "1")
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
	if r.Method != http.MethodGet {
		f.nonces = append(f.nonces, r.Header.Get(NonceHeader))
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
			} else if strings.Contains(img, "missing") {
				f.write(w, 422, map[string]string{"error": "unable to resolve image: manifest unknown"})
				return
			}
			f.seq++
			m := &fakeMachine{id: fmt.Sprintf("m%d", f.seq), state: "created", config: cfg, created: f.clock.Now(), instance: 1}
			// skip_service_registration (fly-go LaunchMachineInput): Fly
			// Proxy does not route to it until it is uncordoned.
			m.cordoned, _ = body["skip_service_registration"].(bool)
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
	// Leases (flaps AcquireLease/ReleaseLease, NonceHeader): while someone
	// holds a machine's lease, a write without its nonce is refused with
	// 409 naming the holder.
	if l := m.lease; l != nil && now.After(l.until) {
		m.lease = nil
	}
	if r.Method != http.MethodGet && action != "lease" && m.lease != nil && r.Header.Get(NonceHeader) != m.lease.nonce {
		f.write(w, 409, map[string]string{"error": "lease currently held by " + m.lease.owner})
		return
	}
	switch {
	case r.Method == http.MethodGet && action == "":
		f.write(w, 200, f.json(m))
	case r.Method == http.MethodPost && action == "lease":
		if m.lease != nil && r.Header.Get(NonceHeader) != m.lease.nonce {
			f.write(w, 409, map[string]string{"error": "lease currently held by " + m.lease.owner})
			return
		}
		ttl, err := strconv.Atoi(r.URL.Query().Get("ttl"))
		if err != nil || ttl <= 0 {
			ttl = 30
		}
		nonce := fmt.Sprintf("nonce-%s-%d", m.id, now.UnixNano())
		m.lease = &fakeLease{nonce: nonce, owner: "mythex@test", until: now.Add(time.Duration(ttl) * time.Second)}
		f.write(w, 200, map[string]any{"status": "success", "data": map[string]any{"nonce": nonce, "expires_at": m.lease.until.Unix(), "owner": m.lease.owner, "version": f.instanceID(m)}})
	case r.Method == http.MethodDelete && action == "lease":
		m.lease = nil
		f.write(w, 200, map[string]bool{"ok": true})
	case r.Method == http.MethodPost && action == "":
		// Update (POST .../{id}): current_version must match the version
		// read, else the update would overwrite a concurrent one.
		if v, _ := body["current_version"].(string); v != "" && v != f.instanceID(m) {
			f.write(w, 412, map[string]string{"error": "machine version mismatch: " + v + " is not current"})
			return
		}
		cfg, _ := body["config"].(map[string]any)
		if img, _ := cfg["image"].(string); strings.Contains(img, "missing") {
			f.write(w, 422, map[string]string{"error": "unable to resolve image: manifest unknown"})
			return
		}
		f.storm = f.stormAfterUpdate
		skip, _ := body["skip_launch"].(bool)
		if f.updatingFor > 0 && !skip {
			m.state, m.pending, m.nextAt = "updating", cfg, now.Add(f.updatingFor)
		} else {
			f.replace(m, now, cfg, skip)
		}
		f.write(w, 200, f.json(m))
	case r.Method == http.MethodPost && action == "stop":
		if m.state == "started" {
			f.event(m, "exit", "stopped", "user", now, map[string]any{"exit_event": f.exitEvent(0, 15, true, false, now)})
		}
		m.state, m.nextAt = "stopped", time.Time{}
		f.write(w, 200, map[string]bool{"ok": true})
	case r.Method == http.MethodPost && action == "start":
		if m.state != "stopped" && m.state != "suspended" {
			f.write(w, 412, map[string]string{"error": "unable to start machine from current state: '" + m.state + "'"})
			return
		}
		m.state, m.nextAt, m.restarts = "starting", now.Add(bootDelay), 0
		f.write(w, 200, map[string]any{"previous_state": "stopped"})
	case r.Method == http.MethodPost && (action == "cordon" || action == "uncordon"):
		m.cordoned = action == "cordon"
		f.write(w, 200, map[string]bool{"ok": true})
	case r.Method == http.MethodDelete && action == "":
		if r.URL.Query().Get("force") != "true" && m.state == "started" {
			f.write(w, 412, map[string]string{"error": "machine is started; stop it or use force"})
			return
		}
		m.destroyed = true
		f.write(w, 200, map[string]bool{"ok": true})
	case r.Method == http.MethodGet && action == "wait":
		// GET .../wait: timeout 1–60 s (fly-go WithWaitTimeout clamps to
		// that; the API refuses others with 400); waiting for stopped
		// needs the instance; it blocks until the state or the timeout
		// (408).
		want := r.URL.Query().Get("state")
		secs, err := strconv.Atoi(r.URL.Query().Get("timeout"))
		if err != nil || secs < 1 || secs > 60 {
			f.write(w, 400, map[string]string{"error": "invalid timeout: must be between 1 and 60 seconds"})
			return
		}
		inst := r.URL.Query().Get("instance_id")
		if want == "stopped" && inst == "" {
			f.write(w, 400, map[string]string{"error": "instance_id is required when waiting for stopped"})
			return
		}
		deadline := now.Add(time.Duration(secs) * time.Second)
		for {
			f.advance(m)
			if m.state == want && (inst == "" || inst == f.instanceID(m)) {
				f.write(w, 200, map[string]bool{"ok": true})
				return
			}
			if !f.clock.Now().Before(deadline) {
				f.write(w, 408, map[string]string{"error": "deadline_exceeded: machine did not reach " + want})
				return
			}
			f.mu.Unlock()
			select {
			case <-f.clock.After(100 * time.Millisecond):
			case <-r.Context().Done():
				f.mu.Lock()
				return
			}
			f.mu.Lock()
		}
	default:
		f.write(w, 404, map[string]string{"error": "not found"})
	}
	_ = locked
}

func (f *fakeFly) client(t *testing.T, opts Options) *Client {
	t.Helper()
	opts.BaseURL, opts.Token = f.srv.URL, f.token
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
		opts.NoPacing = true // real time: tests do not wait out the buckets
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

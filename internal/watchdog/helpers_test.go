package watchdog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/hostlock"
	"github.com/mythex/mythex/internal/runtime"
	"github.com/mythex/mythex/internal/testkit"
)

// t0 is 03:00 — the hour a crashed process should come back without anyone
// waking up.
var t0 = time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)

// service returns a valid service of version in code, with an HTTP health
// check, as the process runtime would run it.
func service(name, version string) definition.Service {
	return definition.Service{
		Name:    name,
		Version: version,
		Image:   "mythex/app:" + version,
		Environment: map[string]string{
			definition.EnvVersion: version, definition.EnvService: name, "MYTHEX_APP_SERVICE": name,
		},
		StopGracePeriod: 30 * time.Second,
		Restart:         definition.RestartPolicy{Policy: definition.RestartNo},
		Healthcheck: &definition.Healthcheck{
			Interval: 5 * time.Second, Timeout: 2 * time.Second, Retries: 3,
			StartPeriod: 10 * time.Second, StartInterval: time.Second,
		},
		Process: &definition.ProcessSpec{Executable: "/opt/app/bin/app", WorkingDir: "/opt/app", Port: 9111, HealthPath: "/healthz"},
	}
}

// theFour are the write-up's four services.
var theFour = []string{"api", "gateway", "orchestrator", "publish-worker"}

// newDefinition builds a sealed definition of version with the named
// services.
func newDefinition(t testing.TB, version string, names ...string) *definition.Definition {
	t.Helper()
	d := &definition.Definition{Version: version, Source: definition.Source{File: "/srv/compose.yaml", SHA256: "00"}}
	for _, n := range names {
		d.Services = append(d.Services, service(n, version))
	}
	if err := d.Seal(); err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return d
}

// fakeRuntime is an in-memory runtime with the runtime.Runtime contract:
// instances keyed by spec, Start idempotent on the spec and ErrConflict
// against another running spec, Stop keeping the instance, Status sorted.
// Tests crash, sicken or replace instances behind the watchdog's back.
type fakeRuntime struct {
	mu    sync.Mutex
	clock clockwork.Clock
	inst  map[string]*runtime.ServiceStatus // by ID
	calls []string

	// afterStart is the health a started instance gets; default healthy.
	afterStart runtime.HealthStatus
	// crashOnStart makes Start leave the instance exited (a boot crash).
	crashOnStart map[string]bool
	// startErr makes Start of a service fail.
	startErr map[string]error
	// statusErr makes Status fail.
	statusErr error
	// during runs inside Start and Stop (e.g. to probe the host lock).
	during func(call string)
}

func newFakeRuntime(clock clockwork.Clock) *fakeRuntime {
	return &fakeRuntime{clock: clock, inst: map[string]*runtime.ServiceStatus{},
		afterStart: runtime.HealthHealthy, crashOnStart: map[string]bool{}, startErr: map[string]error{}}
}

func instanceID(name, spec string) string { return name + "-" + spec[:12] }

func (f *fakeRuntime) Status(context.Context) ([]runtime.ServiceStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.statusErr != nil {
		return nil, f.statusErr
	}
	out := make([]runtime.ServiceStatus, 0, len(f.inst))
	for _, s := range f.inst {
		out = append(out, *s)
	}
	runtime.SortStatuses(out)
	return out, nil
}

func (f *fakeRuntime) Start(_ context.Context, svc definition.Service) error {
	f.mu.Lock()
	during := f.during
	f.calls = append(f.calls, "start "+svc.Name+" "+svc.Version)
	f.mu.Unlock()
	if during != nil {
		during("start " + svc.Name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.startErr[svc.Name]; err != nil {
		return err
	}
	spec := svc.SpecHash()
	for _, s := range f.inst {
		if s.Name == svc.Name && s.State == runtime.StateRunning {
			if s.SpecHash == spec {
				return nil
			}
			return fmt.Errorf("start %s: %w", svc.Name, runtime.ErrConflict)
		}
	}
	id := instanceID(svc.Name, spec)
	s, ok := f.inst[id]
	if ok {
		s.RestartCount++
	} else {
		s = &runtime.ServiceStatus{Name: svc.Name, ID: id, SpecHash: spec, Version: svc.Version}
		f.inst[id] = s
	}
	s.State, s.StartedAt, s.FinishedAt, s.ExitCode, s.Signal = runtime.StateRunning, f.clock.Now(), time.Time{}, 0, ""
	s.Health = runtime.Health{Status: f.afterStart}
	if f.crashOnStart[svc.Name] {
		s.State, s.ExitCode, s.FinishedAt, s.Health = runtime.StateExited, 1, f.clock.Now(), runtime.Health{Status: runtime.HealthNone}
	}
	return nil
}

func (f *fakeRuntime) Stop(_ context.Context, name string, _ time.Duration) (runtime.StopResult, error) {
	f.mu.Lock()
	during := f.during
	f.calls = append(f.calls, "stop "+name)
	f.mu.Unlock()
	if during != nil {
		during("stop " + name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	found := false
	for _, s := range f.inst {
		if s.Name != name {
			continue
		}
		found = true
		if s.State == runtime.StateRunning {
			s.State, s.FinishedAt, s.ExitCode, s.Health = runtime.StateStopped, f.clock.Now(), 0, runtime.Health{Status: runtime.HealthNone}
			return runtime.StopResult{Name: name, ID: s.ID, WasRunning: true}, nil
		}
	}
	if !found {
		return runtime.StopResult{}, fmt.Errorf("stop %s: %w", name, runtime.ErrNotFound)
	}
	return runtime.StopResult{Name: name}, nil
}

// running makes svc's spec the running, healthy instance (as if the deploy
// or the bootstrap had started it), stopping any other.
func (f *fakeRuntime) running(svc definition.Service, h runtime.HealthStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	spec := svc.SpecHash()
	for _, s := range f.inst {
		if s.Name == svc.Name && s.State == runtime.StateRunning {
			s.State = runtime.StateStopped
		}
	}
	id := instanceID(svc.Name, spec)
	f.inst[id] = &runtime.ServiceStatus{Name: svc.Name, ID: id, SpecHash: spec, Version: svc.Version,
		State: runtime.StateRunning, StartedAt: f.clock.Now(), Health: runtime.Health{Status: h}}
}

// runAll starts every service of d, healthy.
func (f *fakeRuntime) runAll(d *definition.Definition) {
	for _, s := range d.Services {
		f.running(s, runtime.HealthHealthy)
	}
}

// crash ends the running instance of name as a SIGKILL would.
func (f *fakeRuntime) crash(name string) {
	f.set(name, func(s *runtime.ServiceStatus) {
		s.State, s.ExitCode, s.Signal, s.FinishedAt = runtime.StateExited, 137, "SIGKILL", f.clock.Now()
		s.Health = runtime.Health{Status: runtime.HealthNone}
	})
}

// health sets the health of the running instance of name.
func (f *fakeRuntime) health(name string, h runtime.HealthStatus) {
	f.set(name, func(s *runtime.ServiceStatus) {
		s.Health = runtime.Health{Status: h, FailingStreak: 3, Log: []runtime.CheckResult{{OK: false, ExitCode: 503, Output: "draining"}}}
	})
}

// set applies change to the newest instance of name.
func (f *fakeRuntime) set(name string, change func(*runtime.ServiceStatus)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var newest *runtime.ServiceStatus
	for _, s := range f.inst {
		if s.Name == name && (newest == nil || s.StartedAt.After(newest.StartedAt) || s.State == runtime.StateRunning) {
			newest = s
		}
	}
	if newest == nil {
		panic("fakeRuntime: no instance of " + name)
	}
	change(newest)
}

// takeCalls returns the Start/Stop calls so far and forgets them.
func (f *fakeRuntime) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// env is a watchdog over a real definition store and a real host lock in a
// temporary state directory, a fake runtime and a fake clock.
type env struct {
	t        *testing.T
	dir      string
	clock    *clockwork.FakeClock
	store    *definition.Store
	rt       *fakeRuntime
	lock     *hostlock.Lock
	reg      *prometheus.Registry
	logs     *syncBuffer
	w        *Watchdog
	def      *definition.Definition
	policy   Policy
	stateDir string
}

// newEnv publishes d (unless nil) and runs every service of it healthy.
func newEnv(t *testing.T, p Policy, d *definition.Definition) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: clockwork.NewFakeClockAt(t0), policy: p, def: d}
	e.stateDir = e.dir
	var err error
	e.store, err = definition.OpenStore(filepath.Join(e.dir, "definitions"))
	if err != nil {
		t.Fatal(err)
	}
	e.rt = newFakeRuntime(e.clock)
	if d != nil {
		if _, err := e.store.Publish(d); err != nil {
			t.Fatal(err)
		}
		e.rt.runAll(d)
	}
	e.lock = hostlock.New(e.dir)
	e.start()
	return e
}

// start (re)creates the watchdog on the env's state, as an agent (re)start.
func (e *env) start() {
	e.t.Helper()
	if e.w != nil {
		if err := e.w.Close(); err != nil {
			e.t.Fatal(err)
		}
	}
	e.reg = prometheus.NewRegistry()
	e.logs = &syncBuffer{}
	w, err := New(Config{
		Definitions: e.store, Runtime: e.rt, Lock: e.lock, StateDir: e.stateDir, Policy: e.policy,
		Clock: e.clock, Registry: e.reg, Logger: newJSONLogger(e.logs),
	})
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	e.w = w
	e.t.Cleanup(func() { _ = w.Close() })
}

// round advances the clock by one interval and runs a round.
func (e *env) round() Round {
	e.t.Helper()
	e.clock.Advance(e.w.Policy().Interval)
	return e.w.runOnce(context.Background())
}

// decision is the decision of service name in r.
func decision(t *testing.T, r Round, name string) Decision {
	t.Helper()
	for _, s := range r.Services {
		if s.Name == name {
			return s.Decision
		}
	}
	t.Fatalf("round has no decision for %s: %+v", name, r)
	return Decision{}
}

// record is the watchdog's status entry for name.
func (e *env) record(name string) ServiceStatus {
	e.t.Helper()
	for _, s := range e.w.Status().Services {
		if s.Name == name {
			return s
		}
	}
	e.t.Fatalf("status has no service %s", name)
	return ServiceStatus{}
}

// otherLock is the host lock as a deploy or the bootstrap holds it: another
// Lock on the same state directory (flock excludes across open files).
func (e *env) otherLock(holder string) *hostlock.Lock {
	e.t.Helper()
	l := hostlock.New(e.dir)
	if err := l.TryLock(holder); err != nil {
		e.t.Fatalf("take the host lock as %q: %v", holder, err)
	}
	e.t.Cleanup(func() { _ = l.Unlock() })
	return l
}

// refsBytes reads the definition store's refs file.
func (e *env) refsBytes() []byte {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, "definitions", "refs.json"))
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// syncBuffer is the JSON log, safe for the logger and the test at once.
type syncBuffer struct{ testkit.SyncBuffer }

// lines returns the JSON log lines whose fields include every key=value of
// match.
func (s *syncBuffer) lines(match map[string]any) []map[string]any {
	var out []map[string]any
	for _, l := range bytes.Split(s.Bytes(), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			continue
		}
		ok := true
		for k, v := range match {
			if fmt.Sprint(m[k]) != fmt.Sprint(v) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

var errBoom = errors.New("boom")

// newJSONLogger logs JSON lines into b, debug level and up.
func newJSONLogger(b *syncBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

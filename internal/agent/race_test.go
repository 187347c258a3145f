package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/hostlock"
	"github.com/mythex/mythex/internal/runtime"
	"github.com/mythex/mythex/internal/testkit"
	"github.com/mythex/mythex/internal/watchdog"
)

// The race test: a real agent — its HTTP API, leases, host lock, definition
// store and watchdog — on the real clock at scaled timings (W = 2ms, K = 3,
// drains of up to 4ms so that (K−1)·W ≥ drain max holds at this scale too),
// with an in-memory runtime that records who acts. Each interleaving runs
// deploys through the API (some die mid-way and leave their lease to expire),
// crashes and sickens services at random, and turns maintenance on and off,
// while the watchdog runs its rounds. Asserted for every interleaving:
//
//   - the watchdog and a deploy (or a recovery, or the bootstrap) never act
//     at once: every start and stop happens under the host lock, and no two
//     holders' actions overlap;
//   - the definition is never written by the watchdog: every change of the
//     store's refs falls inside a deploy step that writes it;
//   - in the end every service of the current definition runs, healthy (the
//     write-up's "server left with no gateway" cannot happen).

// raceServices are the write-up's four services.
var raceServices = []string{"api", "gateway", "orchestrator", "publish-worker"}

// act is one start or stop, stamped with a global sequence number at its
// beginning and end and the host lock's holder at both.
type act struct {
	what       string
	holder     string
	begin, end int64
}

// raceRuntime is an in-memory runtime.Runtime that records every action.
// Stop drains: the instance stays running, unhealthy, for up to maxDrain,
// then stops.
type raceRuntime struct {
	stateDir string
	maxDrain time.Duration
	seq      *atomic.Int64

	mu   sync.Mutex
	rnd  *rand.Rand
	inst map[string]*runtime.ServiceStatus // by instance ID
	acts []act
}

func newRaceRuntime(stateDir string, seed uint64, maxDrain time.Duration) *raceRuntime {
	return &raceRuntime{stateDir: stateDir, maxDrain: maxDrain, seq: new(atomic.Int64),
		rnd: rand.New(rand.NewPCG(seed, 7)), inst: map[string]*runtime.ServiceStatus{}}
}

// begin stamps the start of an action and who holds the host lock.
func (r *raceRuntime) begin() (int64, string) {
	return r.seq.Add(1), hostlock.Holder(r.stateDir)
}

func (r *raceRuntime) record(what string, begin int64, holder string) {
	end, holderAtEnd := r.seq.Add(1), hostlock.Holder(r.stateDir)
	if holderAtEnd != holder {
		holder = holder + " → " + holderAtEnd
	}
	r.mu.Lock()
	r.acts = append(r.acts, act{what: what, holder: holder, begin: begin, end: end})
	r.mu.Unlock()
}

func (r *raceRuntime) jitter(max time.Duration) {
	r.mu.Lock()
	d := time.Duration(r.rnd.Int64N(int64(max) + 1))
	r.mu.Unlock()
	time.Sleep(d)
}

func (r *raceRuntime) Start(_ context.Context, svc definition.Service) error {
	b, holder := r.begin()
	defer r.record("start "+svc.Name+" "+svc.Version, b, holder)
	r.jitter(200 * time.Microsecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	spec := svc.SpecHash()
	for _, s := range r.inst {
		if s.Name == svc.Name && s.State == runtime.StateRunning {
			if s.SpecHash == spec {
				return nil
			}
			return fmt.Errorf("start %s: %w", svc.Name, runtime.ErrConflict)
		}
	}
	id := svc.Name + "-" + spec[:12]
	s, ok := r.inst[id]
	if !ok {
		s = &runtime.ServiceStatus{Name: svc.Name, ID: id, SpecHash: spec, Version: svc.Version}
		r.inst[id] = s
	} else {
		s.RestartCount++
	}
	s.State, s.StartedAt, s.ExitCode, s.Signal = runtime.StateRunning, time.Now(), 0, ""
	s.Health = runtime.Health{Status: runtime.HealthHealthy}
	return nil
}

func (r *raceRuntime) Stop(_ context.Context, name string, _ time.Duration) (runtime.StopResult, error) {
	b, holder := r.begin()
	defer r.record("stop "+name, b, holder)
	r.mu.Lock()
	var run *runtime.ServiceStatus
	found := false
	for _, s := range r.inst {
		if s.Name == name {
			found = true
			if s.State == runtime.StateRunning {
				run = s
			}
		}
	}
	if run == nil {
		r.mu.Unlock()
		if !found {
			return runtime.StopResult{}, fmt.Errorf("stop %s: %w", name, runtime.ErrNotFound)
		}
		return runtime.StopResult{Name: name}, nil
	}
	// Draining: running, health check failing, for a while.
	run.Health = runtime.Health{Status: runtime.HealthUnhealthy, FailingStreak: 1}
	id := run.ID
	r.mu.Unlock()
	began := time.Now()
	r.jitter(r.maxDrain)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.inst[id]
	if s.State == runtime.StateRunning {
		s.State, s.FinishedAt, s.Health = runtime.StateStopped, time.Now(), runtime.Health{Status: runtime.HealthNone}
	}
	return runtime.StopResult{Name: name, ID: id, WasRunning: true, Took: time.Since(began)}, nil
}

func (r *raceRuntime) Status(context.Context) ([]runtime.ServiceStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]runtime.ServiceStatus, 0, len(r.inst))
	for _, s := range r.inst {
		out = append(out, *s)
	}
	runtime.SortStatuses(out)
	return out, nil
}

func (r *raceRuntime) Prune(context.Context, ...string) ([]string, error) { return nil, nil }
func (r *raceRuntime) Close() error                                       { return nil }

// chaos crashes (as SIGKILL) or sickens the running instance of a random
// service: the world, not an actor, so it is not recorded.
func (r *raceRuntime) chaos() {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := raceServices[r.rnd.IntN(len(raceServices))]
	crash := r.rnd.IntN(2) == 0
	for _, s := range r.inst {
		if s.Name != name || s.State != runtime.StateRunning {
			continue
		}
		if crash {
			s.State, s.ExitCode, s.Signal, s.FinishedAt = runtime.StateExited, 137, "SIGKILL", time.Now()
			s.Health = runtime.Health{Status: runtime.HealthNone}
		} else {
			s.Health = runtime.Health{Status: runtime.HealthUnhealthy, FailingStreak: 3}
		}
	}
}

// overlaps returns the pairs of actions by different holders that overlap,
// and the actions taken without the host lock.
func (r *raceRuntime) violations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for i, a := range r.acts {
		if a.holder == "" || strings.Contains(a.holder, "→") {
			out = append(out, fmt.Sprintf("%s while the host lock was %q", a.what, a.holder))
		}
		for _, b := range r.acts[i+1:] {
			if a.holder != b.holder && a.begin < b.end && b.begin < a.end {
				out = append(out, fmt.Sprintf("%s by %q overlaps %s by %q", a.what, a.holder, b.what, b.holder))
			}
		}
	}
	return out
}

func (r *raceRuntime) actsBy(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, a := range r.acts {
		if strings.HasPrefix(a.holder, prefix) {
			n++
		}
	}
	return n
}

// window is a span of time in which a deploy step may write the store.
type window struct {
	from, to time.Time
	what     string
}

// refsWatcher polls the store's refs file and records each change with the
// interval in which it happened.
type refsWatcher struct {
	path    string
	mu      sync.Mutex
	changes []window
	stop    chan struct{}
	done    chan struct{}
}

func watchRefs(path string) *refsWatcher {
	w := &refsWatcher{path: path, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		// A change seen by a read happened after the previous read began and
		// before this one ended.
		prev := time.Now()
		last, _ := os.ReadFile(path)
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			begin := time.Now()
			b, _ := os.ReadFile(path)
			end := time.Now()
			if !bytes.Equal(b, last) {
				w.mu.Lock()
				w.changes = append(w.changes, window{prev, end, string(bytes.TrimSpace(b))})
				w.mu.Unlock()
				last = b
			}
			prev = begin
			time.Sleep(100 * time.Microsecond)
		}
	}()
	return w
}

func (w *refsWatcher) close() []window {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changes
}

// raceHost is one agent under test.
type raceHost struct {
	t      *testing.T
	dir    string
	rt     *raceRuntime
	agent  *Agent
	client *agentapi.Client
	rnd    *rand.Rand

	mu      sync.Mutex
	writes  []window // spans in which deploy steps may write the store
	version int
	// recovering is the open span of a recovery (after a dying deploy, or
	// a release that left the host half deployed): a failed recovery is
	// retried until the next lease is taken, so it may write the store
	// until then.
	recovering *window
}

func (h *raceHost) definition(version string) []byte {
	d := &definition.Definition{Version: version, Host: "web-1", Source: definition.Source{File: "/srv/compose.yaml", SHA256: "00"}}
	for _, n := range raceServices {
		d.Services = append(d.Services, definition.Service{
			Name: n, Version: version, Image: "mythex/app:" + version,
			Environment:     map[string]string{definition.EnvVersion: version, definition.EnvService: n, definition.EnvHost: "web-1"},
			StopGracePeriod: time.Second, Restart: definition.RestartPolicy{Policy: definition.RestartNo},
			// The in-memory runtime does not run the check; its numbers make
			// the agent's Start poll every 5ms.
			Healthcheck: &definition.Healthcheck{Test: []string{"/bin/true"}, Interval: 10 * time.Millisecond,
				Timeout: 5 * time.Millisecond, Retries: 1, StartInterval: 10 * time.Millisecond},
		})
	}
	if err := d.Seal(); err != nil {
		h.t.Fatal(err)
	}
	b, err := d.Encode()
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// writing runs a deploy step that may write the store, recording its span.
func (h *raceHost) writing(what string, f func() error) error {
	from := time.Now()
	err := f()
	h.mu.Lock()
	h.writes = append(h.writes, window{from, time.Now(), what})
	h.mu.Unlock()
	return err
}

func (h *raceHost) pause() {
	h.mu.Lock()
	d := time.Duration(h.rnd.Int64N(int64(3 * time.Millisecond)))
	h.mu.Unlock()
	time.Sleep(d)
}

// deploy runs one deploy of the next version through the agent's API, the
// way the rolling deploy does; dying, it stops after the drain and leaves
// its lease to expire (the agent recovers the host). Failures of the deploy
// itself (a service crashed by the chaos mid-start) roll the host back, or
// leave it to the watchdog; they are not test failures.
func (h *raceHost) deploy(ctx context.Context, dying bool) {
	h.mu.Lock()
	h.version++
	v := fmt.Sprintf("v%d", h.version)
	h.mu.Unlock()
	ttl := 10 * time.Second
	if dying {
		ttl = 30 * time.Millisecond
	}
	if dying {
		// Its recovery (and the retries of a failed one) may write the
		// store from the moment the request is sent until the next lease
		// is taken: the agent grants the lease and starts its TTL before
		// the answer reaches us, and on a loaded machine the answer can
		// arrive after the lease has run out and its recovery has written
		// the store. A recovery still open from before stays open: its
		// retries end only when the agent grants this lease, which happens
		// before the answer arrives, and this recovery continues it.
		h.openRecovery("recovery of " + v)
	}
	var l agentapi.Lease
	for {
		var err error
		l, err = h.client.AcquireLease(ctx, false, "race deploy "+v, ttl)
		if err == nil {
			if !dying {
				// The agent granted the lease before we saw it: no recovery
				// runs from then until its release.
				h.closeRecovery()
			}
			break
		}
		if !errors.Is(err, agentapi.ErrLeaseHeld) || ctx.Err() != nil {
			st, _ := h.agent.Status(context.Background())
			h.t.Errorf("acquire lease for %s: %v (lock %q, lease %+v, recovery %+v, restore %+v)", v, err, st.LockHolder, st.Lease, st.Recovery, st.Restore)
			return
		}
		time.Sleep(time.Millisecond)
	}
	// A dying deploy's lease may run out before it gets this far: then the
	// agent refuses its steps (ErrNoLease), which is the point.
	refused := func(err error) bool { return dying && errors.Is(err, agentapi.ErrNoLease) }
	def := h.definition(v)
	if err := h.writing("publish "+v, func() error { _, err := h.client.Publish(ctx, l.ID, def); return err }); err != nil {
		if !refused(err) {
			h.t.Errorf("publish %s: %v", v, err)
		}
		return
	}
	h.pause()
	if err := h.client.Drain(ctx, l.ID, nil); err != nil {
		if !refused(err) {
			h.t.Errorf("drain: %v", err)
		}
		return
	}
	h.pause()
	if dying {
		return
	}
	if _, err := h.client.Stop(ctx, l.ID); err != nil {
		h.t.Errorf("stop: %v", err)
		return
	}
	h.pause()
	// Start writes the store too: it records the definition as verified on
	// this host once every service answers its health check.
	if err := h.writing("start "+v, func() error { _, err := h.client.Start(ctx, l.ID); return err }); err != nil {
		// The chaos crashed a service mid-start: roll the host back.
		_ = h.writing("rollback "+v, func() error { _, err := h.client.Rollback(ctx, l.ID); return err })
	} else if rep, err := h.client.Verify(ctx, nil, v); err == nil && rep.OK {
		_ = h.writing("mark good "+v, func() error { return h.client.MarkGood(ctx, l.ID) })
	}
	// A release that leaves the host half deployed (the rollback failed too)
	// makes the agent recover the host, as after a dying deploy.
	if h.agent.halfDeployed() {
		h.openRecovery("recovery after the release of " + v)
	}
	if err := h.client.ReleaseLease(ctx, false, l.ID); err != nil {
		h.t.Errorf("release: %v", err)
	}
}

// openRecovery opens a span in which the agent may write the store on its
// own (a recovery and its retries), unless one is open already.
func (h *raceHost) openRecovery(what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.recovering == nil {
		h.recovering = &window{from: time.Now(), what: what}
	}
}

// closeRecovery ends the open recovery span, once a new lease is taken (a
// lease stops the retries) or the test is over.
func (h *raceHost) closeRecovery() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.recovering != nil {
		w := *h.recovering
		w.to = time.Now()
		h.writes = append(h.writes, w)
		h.recovering = nil
	}
}

// memDir is a fresh directory on a memory file system when the machine has
// one (/dev/shm), else t.TempDir(): the race test is about the order of
// actions, and thousands of fsyncs on a shared disk would only make it slow.
func memDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "mythex-race-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func newRaceHost(t *testing.T, seed uint64) *raceHost {
	t.Helper()
	dir := memDir(t)
	rt := newRaceRuntime(dir, seed, 4*time.Millisecond)
	// The agent's warnings (leases that ran out, recoveries, heals) are
	// shown when the interleaving fails: they say who acted when.
	logs := &testkit.SyncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agent log (warnings and errors):\n%s", logs.String())
		}
	})
	a, err := New(Config{
		Host: "web-1", StateDir: dir, Runtime: rt, RuntimeName: "race",
		Logger:       slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Watchdog:     &watchdog.Policy{Interval: 2 * time.Millisecond, FailuresBeforeHeal: 3},
		StartTimeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &raceHost{t: t, dir: dir, rt: rt, agent: a, client: serveAgent(t, a), rnd: rand.New(rand.NewPCG(seed, 11))}
}

// serveAgent serves a's API on a test HTTP server for the rest of the test
// and returns a client of it; the test's cleanup closes the server, then a.
func serveAgent(t *testing.T, a *Agent) *agentapi.Client {
	srv := httptest.NewServer(a.Handler(testToken))
	t.Cleanup(func() {
		srv.Close()
		a.Close()
	})
	return agentapi.NewClient(srv.URL, testToken, nil)
}

// deployGood makes version the host's last good through the agent behind c,
// as a whole deploy does: under a lease of its own it publishes and starts
// version, marks it good and lets the lease go. Any refusal fails the test.
func (h *raceHost) deployGood(ctx context.Context, c *agentapi.Client, version string) {
	h.t.Helper()
	l, err := c.AcquireLease(ctx, false, "first deploy", time.Minute)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := c.Publish(ctx, l.ID, h.definition(version)); err != nil {
		h.t.Fatal(err)
	}
	if _, err := c.Start(ctx, l.ID); err != nil {
		h.t.Fatal(err)
	}
	if err := c.MarkGood(ctx, l.ID); err != nil {
		h.t.Fatal(err)
	}
	if err := c.ReleaseLease(ctx, false, l.ID); err != nil {
		h.t.Fatal(err)
	}
}

func TestAgent_WatchdogRacesDeploys(t *testing.T) {
	t.Parallel()
	// 200 interleavings; the race detector makes each about five times
	// slower in CPU, and what it adds — data races — shows in far fewer, so
	// under -race 50; -short 20.
	n := 200
	switch {
	case testing.Short():
		n = 20
	case raceDetector:
		n = 50
	}
	var watchdogActs, deployActs int
	for i := range n {
		seed := uint64(i)
		ok := t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			wa, da := raceOnce(t, seed)
			watchdogActs += wa
			deployActs += da
		})
		if !ok {
			break
		}
	}
	t.Logf("%d interleavings: %d watchdog actions, %d deploy/recovery actions", n, watchdogActs, deployActs)
	if watchdogActs == 0 || deployActs == 0 {
		t.Errorf("the watchdog acted %d times and deploys %d: the interleavings exercised nothing", watchdogActs, deployActs)
	}
}

// raceOnce is one interleaving; it returns how many actions the watchdog
// and the deploys took.
func raceOnce(t *testing.T, seed uint64) (watchdogActs, deployActs int) {
	h := newRaceHost(t, seed)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rnd := rand.New(rand.NewPCG(seed, 13))

	// The first deploy puts v1 on the host.
	h.deploy(ctx, false)
	refs := watchRefs(filepath.Join(h.dir, "definitions", "refs.json"))

	chaosCtx, stopChaos := context.WithCancel(ctx)
	var chaos sync.WaitGroup
	chaos.Go(func() {
		r := rand.New(rand.NewPCG(seed, 17))
		for chaosCtx.Err() == nil {
			time.Sleep(time.Duration(r.Int64N(int64(4 * time.Millisecond))))
			if r.IntN(3) == 0 {
				h.rt.chaos()
			}
		}
	})
	if rnd.IntN(4) == 0 {
		after := time.Duration(rnd.Int64N(int64(5 * time.Millisecond)))
		length := time.Duration(5+rnd.IntN(15)) * time.Millisecond
		chaos.Go(func() {
			time.Sleep(after)
			if _, err := h.client.SetMaintenance(ctx, length, "race maintenance", "test"); err != nil {
				t.Errorf("maintenance on: %v", err)
			}
		})
	}
	for range 1 + rnd.IntN(3) {
		time.Sleep(time.Duration(rnd.Int64N(int64(6 * time.Millisecond))))
		h.deploy(ctx, rnd.IntN(5) == 0)
	}
	time.Sleep(time.Duration(rnd.Int64N(int64(10 * time.Millisecond))))
	stopChaos()
	chaos.Wait()

	// With the world quiet, the watchdog must bring every service of the
	// current definition back.
	var rep agentapi.VerifyReport
	for {
		st, err := h.client.Status(ctx)
		if err == nil && st.Lease == nil {
			if rep, err = h.client.Verify(ctx, nil, ""); err == nil && rep.OK {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("seed %d: the host did not end with its definition running: %+v; watchdog %+v", seed, rep, st.Watchdog)
		}
		time.Sleep(2 * time.Millisecond)
	}
	// Close the watchdog before the last look, so that nothing acts after it.
	_ = h.agent.watchdog.Close()
	changes := refs.close()
	h.closeRecovery()

	for _, v := range h.rt.violations() {
		t.Errorf("seed %d: %s", seed, v)
	}
	h.mu.Lock()
	writes := slices.Clone(h.writes)
	h.mu.Unlock()
	for _, c := range changes {
		inside := false
		for _, w := range writes {
			if w.from.Before(c.to) && c.from.Before(w.to) {
				inside = true
				break
			}
		}
		if !inside {
			t.Errorf("seed %d: the definition store changed between %v and %v, outside every deploy step that writes it (to %s)", seed, c.from.Format(time.StampMicro), c.to.Format(time.StampMicro), c.what)
			for _, w := range writes {
				t.Logf("write window %s: %v – %v", w.what, w.from.Format(time.StampMicro), w.to.Format(time.StampMicro))
			}
		}
	}
	return h.rt.actsBy("watchdog"), h.rt.actsBy("deploy:")
}

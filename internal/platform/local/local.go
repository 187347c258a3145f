// Package local is the embedded machines platform: each machine is a process
// run by a supervisor with a restart policy (no, always, on-failure +
// max_retries, as Fly and Docker), an event list bounded per machine (five by
// default, newest first, Fly-shaped: launch, start, exit with exit code,
// signal, requested stop, restarting and restart count, update, suspend,
// resume), sleep (suspend: SIGSTOP) and wake (resume: SIGCONT), and its state
// under a state dir so a restarted supervisor takes its machines back.
//
// An "image" on this platform is the path of an executable; the release's
// Args and Env complete it. The supervisor execs argv directly, never
// through a shell. Each machine gets its own loopback port, handed to the
// process in $MYTHEX_APP_LISTEN (host:port, the sample app's listen flag) and
// $PORT (the port alone).
package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/flocks"
	"github.com/mythex/mythex/internal/platform"
)

// Options configure a Supervisor. Zero fields take the documented defaults.
type Options struct {
	// StateDir holds the machines' records (apps/<app>/<id>.json) and logs
	// (apps/<app>/<id>.log). Required; one supervisor per state dir.
	StateDir string
	// MaxEvents bounds each machine's event list (newest kept). Default 5,
	// the bound the write-up's platform had.
	MaxEvents int
	// Host is the address machines listen on. Default 127.0.0.1.
	Host string
	// ListenEnv names the variable that tells a machine's process its
	// host:port. Default MYTHEX_APP_LISTEN (the sample app's --listen).
	ListenEnv string
	// HostNameEnv names the variable that tells a process its machine's id
	// as host name, unless the release's env sets it. Default
	// MYTHEX_APP_HOST_NAME (the sample app's --host-name); "-" disables it.
	HostNameEnv string
	// StopTimeout is how long a stop waits after SIGTERM before SIGKILL.
	// Default 10s (Docker's default stop timeout).
	StopTimeout time.Duration
	// RestartDelay is how long the supervisor waits before restarting a
	// machine that exited. Default 200ms.
	RestartDelay time.Duration
	// Clock is the time source for timestamps and delays. Default real.
	Clock clockwork.Clock
	// Logger logs machine starts and exits. Default discards.
	Logger *slog.Logger
	// PickPort picks each new machine's port on Host; the machine keeps it
	// across restarts and updates. Default: the kernel picks one (a bind to
	// port 0, closed again). Tests that run many machines beside other
	// test processes pass package freeport's ports: a kernel-picked port
	// is in the ephemeral range, where another process's bind or outgoing
	// connection may take it before the machine's process binds it (or
	// while it restarts), and the process exits "address already in use".
	PickPort func() (int, error)
}

func (o Options) withDefaults() Options {
	if o.MaxEvents <= 0 {
		o.MaxEvents = 5
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.ListenEnv == "" {
		o.ListenEnv = "MYTHEX_APP_LISTEN"
	}
	if o.HostNameEnv == "" {
		o.HostNameEnv = "MYTHEX_APP_HOST_NAME"
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 10 * time.Second
	}
	if o.RestartDelay <= 0 {
		o.RestartDelay = 200 * time.Millisecond
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.PickPort == nil {
		host := o.Host
		o.PickPort = func() (int, error) { return freePort(host) }
	}
	return o
}

// ErrLocked is returned by New when another supervisor owns the state dir.
var ErrLocked = errors.New("state dir is owned by another supervisor")

// Supervisor runs the machines of one state dir. It implements
// platform.Platform; Suspend and Resume put a machine to sleep and wake it.
// Close stops every machine process (they start again when a supervisor
// opens the state dir).
type Supervisor struct {
	opts Options
	lock *flocks.Lock

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	machines map[string]*machine // by app/id
}

var _ platform.Platform = (*Supervisor)(nil)

// New opens the state dir, takes it over (ErrLocked when another supervisor
// holds it), and starts every machine whose desired state is started or
// suspended. Stale processes a crashed supervisor left are killed first.
func New(opts Options) (*Supervisor, error) {
	if opts.StateDir == "" {
		return nil, fmt.Errorf("local platform: %w: state dir is required", platform.ErrInvalid)
	}
	opts = opts.withDefaults()
	if err := os.MkdirAll(filepath.Join(opts.StateDir, "apps"), 0o700); err != nil {
		return nil, fmt.Errorf("local platform: %w", err)
	}
	fl := flocks.New(filepath.Join(opts.StateDir, "supervisor.lock"), "local platform lock")
	var held *flocks.HeldError
	if err := fl.TryLock(fmt.Sprintf("local platform (pid %d)", os.Getpid())); errors.As(err, &held) {
		return nil, fmt.Errorf("local platform %s: %w (held by %s)", opts.StateDir, ErrLocked, held.Holder)
	} else if err != nil {
		return nil, fmt.Errorf("local platform: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Supervisor{opts: opts, lock: fl, ctx: ctx, cancel: cancel, machines: map[string]*machine{}}
	recs, err := loadRecords(opts.StateDir)
	if err != nil {
		cancel()
		fl.Unlock()
		return nil, err
	}
	for _, r := range recs {
		killStale(r.PID)
		r.PID = 0
		m := s.adopt(r)
		if r.Desired == platform.StateStarted || r.Desired == platform.StateSuspended {
			if err := m.send(ctx, command{op: opBoot}); err != nil {
				opts.Logger.Warn("restart machine", "machine", r.ID, "err", err)
			}
		}
	}
	return s, nil
}

// Close stops every machine's process (SIGTERM, then SIGKILL after the stop
// timeout) and releases the state dir. Machines keep their desired state.
func (s *Supervisor) Close() error {
	s.cancel()
	s.wg.Wait()
	return s.lock.Unlock()
}

// Name returns "local".
func (s *Supervisor) Name() string { return "local" }

func key(app, id string) string { return app + "/" + id }

// adopt creates the machine's runner for record r.
func (s *Supervisor) adopt(r record) *machine {
	m := newMachine(s, r)
	s.mu.Lock()
	s.machines[key(r.App, r.ID)] = m
	s.mu.Unlock()
	s.wg.Add(1)
	go m.run(s.ctx)
	return m
}

func (s *Supervisor) find(app, id string) (*machine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.machines[key(app, id)]
	if !ok {
		return nil, fmt.Errorf("machine %s of app %s: %w", id, app, platform.ErrNotFound)
	}
	return m, nil
}

func (s *Supervisor) forget(app, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.machines, key(app, id))
}

// List implements platform.Platform.
func (s *Supervisor) List(_ context.Context, app string) ([]platform.Machine, error) {
	s.mu.Lock()
	var ms []*machine
	for _, m := range s.machines {
		if m.app == app {
			ms = append(ms, m)
		}
	}
	s.mu.Unlock()
	out := make([]platform.Machine, 0, len(ms))
	for _, m := range ms {
		v := m.view()
		if v.State != platform.StateDestroyed {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Get implements platform.Platform.
func (s *Supervisor) Get(_ context.Context, app, id string) (platform.Machine, error) {
	m, err := s.find(app, id)
	if err != nil {
		return platform.Machine{}, err
	}
	return m.view(), nil
}

// Create implements platform.Platform: a new machine with its own loopback
// port, launched and started.
func (s *Supervisor) Create(ctx context.Context, app string, cfg platform.Config) (platform.Machine, error) {
	if err := cfg.Validate(); err != nil {
		return platform.Machine{}, err
	}
	if app == "" {
		return platform.Machine{}, fmt.Errorf("%w: app name is empty", platform.ErrInvalid)
	}
	if err := CheckImage(cfg.Image); err != nil {
		return platform.Machine{}, err
	}
	port, err := s.opts.PickPort()
	if err != nil {
		return platform.Machine{}, fmt.Errorf("create machine: %w", err)
	}
	now := s.opts.Clock.Now()
	id := newID()
	r := record{ID: id, App: app, Name: app + "-" + id[:6], Config: cfg.Clone(), State: platform.StateCreated,
		Desired: platform.StateStarted, CreatedAt: now, UpdatedAt: now, Port: port, Instance: 1}
	r.InstanceID = instanceID(id, r.Instance)
	r.addEvent(platform.Event{Type: platform.EventLaunch, Status: "created", Source: "user", Timestamp: now}, s.opts.MaxEvents)
	if err := r.save(s.opts.StateDir); err != nil {
		return platform.Machine{}, err
	}
	m := s.adopt(r)
	if err := m.send(ctx, command{op: opStart, source: "user"}); err != nil {
		return m.view(), err
	}
	return m.view(), nil
}

// Update implements platform.Platform: the process is stopped (a requested
// exit), the config replaced, and a new instance started; the restart count
// starts again from zero.
func (s *Supervisor) Update(ctx context.Context, app, id string, cfg platform.Config) (platform.Machine, error) {
	if err := cfg.Validate(); err != nil {
		return platform.Machine{}, err
	}
	if err := CheckImage(cfg.Image); err != nil {
		return platform.Machine{}, err
	}
	m, err := s.find(app, id)
	if err != nil {
		return platform.Machine{}, err
	}
	if err := m.send(ctx, command{op: opUpdate, cfg: cfg.Clone(), source: "user"}); err != nil {
		return platform.Machine{}, err
	}
	return m.view(), nil
}

// Start implements platform.Platform; starting a suspended machine resumes it.
func (s *Supervisor) Start(ctx context.Context, app, id string) error {
	return s.do(ctx, app, id, command{op: opStart, source: "user"})
}

// Stop implements platform.Platform.
func (s *Supervisor) Stop(ctx context.Context, app, id string) error {
	return s.do(ctx, app, id, command{op: opStop, source: "user"})
}

// Suspend puts a started machine to sleep: its process is stopped with
// SIGSTOP (it keeps its memory and its listening socket; connections queue in
// the kernel's backlog) and the machine reads suspended, as a Fly machine
// suspended by auto-stop. Start or Resume wakes it.
func (s *Supervisor) Suspend(ctx context.Context, app, id string) error {
	return s.do(ctx, app, id, command{op: opSuspend, source: "user"})
}

// Resume wakes a suspended machine (SIGCONT).
func (s *Supervisor) Resume(ctx context.Context, app, id string) error {
	return s.do(ctx, app, id, command{op: opResume, source: "user"})
}

// Destroy implements platform.Platform: the process is stopped and the
// machine's record and log removed.
func (s *Supervisor) Destroy(ctx context.Context, app, id string) error {
	return s.do(ctx, app, id, command{op: opDestroy, source: "user"})
}

func (s *Supervisor) do(ctx context.Context, app, id string, c command) error {
	m, err := s.find(app, id)
	if err != nil {
		return err
	}
	return m.send(ctx, c)
}

// Wait implements platform.Platform, polling every 50ms on the clock.
func (s *Supervisor) Wait(ctx context.Context, app, id string, state platform.State, timeout time.Duration) error {
	deadline := s.opts.Clock.Now().Add(timeout)
	for {
		m, err := s.Get(ctx, app, id)
		if err != nil {
			return err
		}
		if m.State == state {
			return nil
		}
		if !s.opts.Clock.Now().Before(deadline) {
			return fmt.Errorf("machine %s is %s, not %s, after %s: %w", id, m.State, state, timeout, platform.ErrTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.opts.Clock.After(50 * time.Millisecond):
		}
	}
}

// freePort asks the kernel for a free TCP port on host.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// newID returns a Fly-like machine id: 14 hex digits.
func newID() string {
	b := make([]byte, 7)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func instanceID(id string, n int) string { return fmt.Sprintf("%s-%d", id, n) }

package local

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/platform"
)

// Operations a machine's runner carries out.
const (
	opStart   = "start"
	opBoot    = "boot" // the supervisor starting a machine it took back
	opStop    = "stop"
	opUpdate  = "update"
	opSuspend = "suspend"
	opResume  = "resume"
	opDestroy = "destroy"
)

type command struct {
	op     string
	cfg    platform.Config
	source string
	reply  chan error
}

// machine is one machine and its runner: the only goroutine that starts,
// signals and reaps its process and changes its record.
type machine struct {
	s       *Supervisor
	app, id string
	cmds    chan command
	done    chan struct{}

	mu  sync.Mutex
	rec record

	// Owned by the runner.
	cur      *proc
	restartT clockwork.Timer
}

func newMachine(s *Supervisor, r record) *machine {
	return &machine{s: s, app: r.App, id: r.ID, cmds: make(chan command), done: make(chan struct{}), rec: r}
}

// send hands c to the runner and waits for its outcome.
func (m *machine) send(ctx context.Context, c command) error {
	c.reply = make(chan error, 1)
	select {
	case m.cmds <- c:
	case <-m.done:
		return fmt.Errorf("machine %s: %w", m.id, platform.ErrNotFound)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-c.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// view returns the machine as the platform reports it.
func (m *machine) view() platform.Machine {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rec
	out := platform.Machine{ID: r.ID, Name: r.Name, App: r.App, State: r.State, Config: r.Config.Clone(), ImageRef: r.Config.Image,
		InstanceID: r.InstanceID, Address: fmt.Sprintf("%s:%d", m.s.opts.Host, r.Port),
		Events: append([]platform.Event(nil), r.Events...), RestartCount: r.RestartCount, HasRestartCount: true,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.State == platform.StateStarted || r.State == platform.StateSuspended {
		out.StartedAt = r.StartedAt
	}
	return out
}

// change applies f to the record under the lock and saves it.
func (m *machine) change(f func(r *record)) {
	m.mu.Lock()
	f(&m.rec)
	r := m.rec
	m.mu.Unlock()
	if r.State == platform.StateDestroyed {
		return
	}
	if err := r.save(m.s.opts.StateDir); err != nil {
		m.s.opts.Logger.Error("save machine record", "machine", m.id, "err", err)
	}
}

func (m *machine) event(r *record, e platform.Event) {
	if e.Timestamp.IsZero() {
		e.Timestamp = m.s.opts.Clock.Now()
	}
	r.addEvent(e, m.s.opts.MaxEvents)
}

// run is the runner loop. It ends when the machine is destroyed or the
// supervisor closes (then it stops the process, keeping the desired state).
func (m *machine) run(ctx context.Context) {
	defer m.s.wg.Done()
	defer close(m.done)
	for {
		var exited <-chan procExit
		if m.cur != nil {
			exited = m.cur.exited
		}
		var restart <-chan time.Time
		if m.restartT != nil {
			restart = m.restartT.Chan()
		}
		select {
		case <-ctx.Done():
			m.cancelRestart()
			if m.cur != nil {
				m.stopProcess("supervisor", platform.StateStopped)
			}
			return
		case c := <-m.cmds:
			err := m.safely(func() error { return m.handle(c) })
			c.reply <- err
			if c.op == opDestroy && err == nil {
				return
			}
		case x := <-exited:
			m.safely(func() error { m.exited(x); return nil })
		case <-restart:
			m.restartT = nil
			m.safely(func() error { m.start("supervisor"); return nil })
		}
	}
}

// safely runs f, turning a panic into an error so one machine's bug cannot
// take the supervisor down.
func (m *machine) safely(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			m.s.opts.Logger.Error("machine runner panicked", "machine", m.id, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("machine %s: internal error: %v", m.id, p)
		}
	}()
	return f()
}

func (m *machine) state() platform.State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rec.State
}

func (m *machine) handle(c command) error {
	switch c.op {
	case opBoot:
		m.change(func(r *record) { r.State = platform.StateStopped })
		m.start("supervisor")
	case opStart:
		switch {
		case m.state() == platform.StateSuspended:
			return m.resume(c.source)
		case m.cur != nil:
			return nil
		}
		m.cancelRestart()
		m.change(func(r *record) { r.RestartCount = 0; r.Desired = platform.StateStarted })
		m.start(c.source)
	case opStop:
		m.cancelRestart()
		if m.cur != nil {
			m.stopProcess(c.source, platform.StateStopped)
		}
		m.change(func(r *record) { r.State, r.Desired = platform.StateStopped, platform.StateStopped })
	case opUpdate:
		m.cancelRestart()
		if m.cur != nil {
			m.stopProcess(c.source, platform.StateReplacing)
		}
		m.change(func(r *record) {
			r.Config = c.cfg
			r.Instance++
			r.InstanceID = instanceID(r.ID, r.Instance)
			r.RestartCount = 0
			r.Desired = platform.StateStarted
			m.event(r, platform.Event{Type: platform.EventUpdate, Status: "replacing", Source: c.source})
		})
		m.start(c.source)
	case opSuspend:
		if m.cur == nil || m.state() != platform.StateStarted {
			return fmt.Errorf("suspend machine %s: it is %s: %w", m.id, m.state(), platform.ErrConflict)
		}
		m.cur.signal(syscall.SIGSTOP)
		m.cur.waitStopped()
		m.change(func(r *record) {
			r.State, r.Desired = platform.StateSuspended, platform.StateSuspended
			m.event(r, platform.Event{Type: platform.EventSuspend, Status: "suspended", Source: c.source})
		})
	case opResume:
		return m.resume(c.source)
	case opDestroy:
		m.cancelRestart()
		if m.cur != nil {
			m.stopProcess(c.source, platform.StateDestroying)
		}
		m.mu.Lock()
		m.rec.State = platform.StateDestroyed
		r := m.rec
		m.mu.Unlock()
		m.s.forget(m.app, m.id)
		return r.remove(m.s.opts.StateDir)
	default:
		return fmt.Errorf("machine %s: unknown operation %q", m.id, c.op)
	}
	return nil
}

func (m *machine) resume(source string) error {
	if m.state() != platform.StateSuspended || m.cur == nil {
		return fmt.Errorf("resume machine %s: it is %s: %w", m.id, m.state(), platform.ErrConflict)
	}
	m.cur.signal(syscall.SIGCONT)
	m.change(func(r *record) {
		r.State, r.Desired = platform.StateStarted, platform.StateStarted
		m.event(r, platform.Event{Type: platform.EventResume, Status: "started", Source: source})
	})
	return nil
}

func (m *machine) cancelRestart() {
	if m.restartT != nil {
		m.restartT.Stop()
		m.restartT = nil
	}
}

// env is the process's environment: a minimal base, the release's env, and
// what the platform tells every machine (its listen address, port, id).
func (m *machine) env(r record) []string {
	o := m.s.opts
	vars := map[string]string{}
	for k, v := range r.Config.Env {
		vars[k] = v
	}
	addr := fmt.Sprintf("%s:%d", o.Host, r.Port)
	vars[o.ListenEnv] = addr
	vars["PORT"] = strconv.Itoa(r.Port)
	vars["MYTHEX_MACHINE_ID"] = r.ID
	if o.HostNameEnv != "-" {
		if _, set := r.Config.Env[o.HostNameEnv]; !set {
			vars[o.HostNameEnv] = r.ID
		}
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := baseEnv()
	for _, k := range keys {
		env = append(env, k+"="+vars[k])
	}
	return env
}

// start execs the machine's image. A failure to exec counts as an exit with
// code 127 (command not found), under the restart policy like any exit.
func (m *machine) start(source string) {
	m.mu.Lock()
	r := m.rec
	m.mu.Unlock()
	argv := append([]string{r.Config.Image}, r.Config.Args...)
	logf, err := os.OpenFile(r.logPath(m.s.opts.StateDir), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	var p *proc
	if err == nil {
		p, err = spawn(argv, m.env(r), logf)
		logf.Close()
	}
	now := m.s.opts.Clock.Now()
	if err != nil {
		m.s.opts.Logger.Warn("machine could not start", "machine", m.id, "image", r.Config.Image, "err", err)
		m.change(func(r *record) { r.State = platform.StateStarting })
		m.exited(procExit{code: 127})
		return
	}
	m.cur = p
	m.change(func(r *record) {
		r.State, r.StartedAt, r.PID = platform.StateStarted, now, p.pid
		m.event(r, platform.Event{Type: platform.EventStart, Status: "started", Source: source, Timestamp: now})
	})
	m.s.opts.Logger.Info("machine started", "machine", m.id, "app", m.app, "pid", p.pid, "image", r.Config.Image)
}

// exited records an exit the machine did not ask for and applies the
// restart policy.
func (m *machine) exited(x procExit) {
	m.cur = nil
	now := m.s.opts.Clock.Now()
	var restart bool
	m.change(func(r *record) {
		pol := r.Config.Restart.Effective()
		failed := x.code != 0 || x.signal != 0
		switch pol.Policy {
		case platform.RestartAlways:
			restart = true
		case platform.RestartOnFailure:
			restart = failed && r.RestartCount < pol.MaxRetries
		}
		if restart {
			r.RestartCount++
			r.State = platform.StateStarting
		} else {
			r.State, r.Desired = platform.StateStopped, platform.StateStopped
		}
		r.PID = 0
		m.event(r, platform.Event{Type: platform.EventExit, Status: string(r.State), Source: "supervisor", Timestamp: now,
			RestartCount: r.RestartCount,
			Exit:         &platform.Exit{ExitCode: x.code, Signal: x.signal, Restarting: restart, ExitedAt: now}})
	})
	m.s.opts.Logger.Info("machine exited", "machine", m.id, "app", m.app, "exit_code", x.code, "signal", x.signal, "restarting", restart)
	if restart {
		m.restartT = m.s.opts.Clock.NewTimer(m.s.opts.RestartDelay)
	}
}

// stopProcess ends the running process on request: SIGTERM (after SIGCONT,
// should it be suspended), then SIGKILL after the stop timeout. The exit is
// recorded as a requested stop; the machine is left in state then.
func (m *machine) stopProcess(source string, then platform.State) {
	p := m.cur
	m.change(func(r *record) { r.State = platform.StateStopping })
	p.signal(syscall.SIGCONT)
	p.signal(syscall.SIGTERM)
	var x procExit
	t := m.s.opts.Clock.NewTimer(m.s.opts.StopTimeout)
	select {
	case x = <-p.exited:
		t.Stop()
	case <-t.Chan():
		p.signal(syscall.SIGKILL)
		x = <-p.exited
	}
	m.cur = nil
	now := m.s.opts.Clock.Now()
	m.change(func(r *record) {
		r.State, r.PID = then, 0
		m.event(r, platform.Event{Type: platform.EventExit, Status: string(then), Source: source, Timestamp: now,
			RestartCount: r.RestartCount,
			Exit:         &platform.Exit{ExitCode: x.code, Signal: x.signal, RequestedStop: true, ExitedAt: now}})
	})
}

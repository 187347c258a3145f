// Package process is the embedded default runtime: each service is a child
// process of the host agent, in its own process group, exec-ed directly from
// its definition (never through a shell), with exactly the definition's
// environment, its output in a size-rotated log file per service, its exit
// code and restart count tracked and its health checked as Docker checks a
// container's.
//
// # Instances and records
//
// An instance is one service at one spec hash, with the ID
// "<name>-<first 12 hex of the spec hash>". Every instance has a record,
// <StateDir>/instances/<id>.json, rewritten atomically at each transition: the
// spec, pid, process start time, state, exit code and restart count. A stopped
// instance keeps its record, so the previous version stays restorable (Start
// with the same spec restarts it) until Prune drops it.
//
// # Agent restarts: adoption
//
// Services outlive the agent: they run in their own process groups, and Close
// leaves them running. When a new Process opens the same StateDir it adopts
// every recorded instance whose pid is still alive with the same process start
// time (so a reused pid is never mistaken for it): it watches for its exit
// with a pidfd, checks its health, and can stop it as any other. What a
// non-parent cannot know is how an adopted process exits: its ExitCode is -1
// (unknown). An instance whose process died while no agent ran is reported
// exited, exit code unknown.
//
// Output survives the handover too. A service writes to a pipe the agent
// reads into its log file; the service also holds the pipe's read end as its
// file descriptor 3 (unused by it), so that while no agent reads, its writes
// neither fail with EPIPE nor kill it with SIGPIPE — they fill the pipe buffer
// (raised to 1 MiB where the system allows), and block only past that. The new
// agent reopens the pipe through /proc/<pid>/fd/3 (after checking it is the
// same pipe) and resumes logging. Under systemd, run the agent with
// KillMode=process so that stopping the agent does not kill its services.
//
// Linux only: process groups, /proc and pidfd.
package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

var _ runtime.Runtime = (*Process)(nil)

// Options configure a Process. Zero values take the documented defaults.
type Options struct {
	// StateDir holds the instance records (StateDir/instances). Required; a
	// directory of the host agent's state, created 0700 if missing.
	StateDir string
	// LogDir holds one log file per service, <LogDir>/<service>.log, rotated
	// by size. Default StateDir/logs.
	LogDir string
	// LogMaxSizeMB is the size in megabytes at which a service's log file is
	// rotated (lumberjack MaxSize). Default 10.
	LogMaxSizeMB int
	// LogMaxBackups is how many rotated files are kept per service. Default 5.
	LogMaxBackups int
	// Clock is the clock for stop deadlines, health check intervals and
	// timestamps. Default the real clock.
	Clock clockwork.Clock
	// Logger receives the runtime's own events (starts, exits, adoption).
	// Default: discarded.
	Logger *slog.Logger
}

// Process is the process runtime. Create it with New; it is safe for
// concurrent use.
type Process struct {
	opts  Options
	clock clockwork.Clock
	log   *slog.Logger

	// ctx ends background loops (health checks, log copying, exit watching
	// of adopted processes) on Close.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	instances map[string]*instance          // by instance ID
	logs      map[string]*lumberjack.Logger // by service name
}

// New opens the process runtime on opts.StateDir and adopts the instances a
// previous agent left running (see the package doc). Errors: a missing
// StateDir, directories that cannot be created, unreadable records.
func New(opts Options) (*Process, error) {
	if opts.StateDir == "" {
		return nil, errors.New("process runtime: Options.StateDir is required")
	}
	// Absolute: the state directory is the marker in every service's
	// environment that finds it again (EnvRuntimeDir).
	abs, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, fmt.Errorf("process runtime: state dir: %w", err)
	}
	opts.StateDir = abs
	if opts.LogDir == "" {
		opts.LogDir = filepath.Join(opts.StateDir, "logs")
	}
	if opts.LogMaxSizeMB <= 0 {
		opts.LogMaxSizeMB = 10
	}
	if opts.LogMaxBackups <= 0 {
		opts.LogMaxBackups = 5
	}
	clock := opts.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for _, dir := range []string{opts.StateDir, recordDir(opts.StateDir), opts.LogDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("process runtime: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Process{
		opts:      opts,
		clock:     clock,
		log:       log,
		ctx:       ctx,
		cancel:    cancel,
		instances: map[string]*instance{},
		logs:      map[string]*lumberjack.Logger{},
	}
	if err := p.load(); err != nil {
		cancel()
		return nil, err
	}
	return p, nil
}

// Start runs svc as a child process; see runtime.Runtime.Start. svc must be
// valid (definition.Service.Validate; errors match definition.ErrInvalid). The argv is
// svc.Process.Executable followed by svc.Command, exec-ed directly; the
// environment is exactly svc.Environment (plus PATH from the agent when the
// definition sets none); the working directory svc.Process.WorkingDir.
func (p *Process) Start(_ context.Context, svc definition.Service) error {
	if svc.Process == nil || svc.Process.Executable == "" {
		return fmt.Errorf("process runtime: start %s: no x-mythex.executable in its compose service; the process runtime runs an executable: %w", svc.Name, runtime.ErrUnsupported)
	}
	if err := svc.Validate(); err != nil {
		return fmt.Errorf("process runtime: start %s: %w", svc.Name, err)
	}
	spec := svc.SpecHash()
	id := instanceID(svc.Name, spec)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return runtime.ErrClosed
	}
	for _, inst := range p.instances {
		if inst.rec.Spec.Name != svc.Name || inst.run == nil {
			continue
		}
		if inst.rec.SpecHash == spec && inst.stop == nil {
			return nil
		}
		if inst.stop != nil {
			return fmt.Errorf("process runtime: start %s version %s: %s is stopping; start it again once Stop returns: %w",
				svc.Name, svc.Version, inst.rec.ID, runtime.ErrConflict)
		}
		return fmt.Errorf("process runtime: start %s version %s: %s (version %s) is running: %w",
			svc.Name, svc.Version, inst.rec.ID, inst.rec.Spec.Version, runtime.ErrConflict)
	}
	inst, ok := p.instances[id]
	if !ok {
		inst = &instance{rec: record{ID: id, Spec: svc, SpecHash: spec}}
	} else {
		inst.rec.RestartCount++
	}
	if err := p.spawn(inst); err != nil {
		if ok {
			inst.rec.RestartCount--
		}
		return fmt.Errorf("process runtime: start %s: %w", id, err)
	}
	p.instances[id] = inst
	return nil
}

// Stop stops the running instance of name; see runtime.Runtime.Stop. SIGTERM
// and SIGKILL go to the instance's whole process group.
func (p *Process) Stop(ctx context.Context, name string, grace time.Duration) (runtime.StopResult, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return runtime.StopResult{}, runtime.ErrClosed
	}
	var running, latest *instance
	for _, inst := range p.instances {
		if inst.rec.Spec.Name != name {
			continue
		}
		if inst.run != nil {
			running = inst
		}
		if latest == nil || inst.rec.StartedAt.After(latest.rec.StartedAt) {
			latest = inst
		}
	}
	if running == nil {
		p.mu.Unlock()
		if latest == nil {
			return runtime.StopResult{}, fmt.Errorf("process runtime: stop %s: %w", name, runtime.ErrNotFound)
		}
		return runtime.StopResult{Name: name, ID: latest.rec.ID, ExitCode: latest.rec.ExitCode, Signal: latest.rec.Signal}, nil
	}
	if grace < 0 {
		grace = running.rec.Spec.StopGracePeriod
	}
	op := running.stop
	if op == nil {
		op = &stopOp{done: make(chan struct{})}
		running.stop = op
		rn := running.run
		p.goDetached(func() { p.runStop(running, rn, op, grace) })
	}
	p.mu.Unlock()
	select {
	case <-op.done:
		return op.result, nil
	case <-ctx.Done():
		return runtime.StopResult{}, fmt.Errorf("process runtime: stop %s: %w (the stop goes on)", name, ctx.Err())
	}
}

// Status reports every instance; see runtime.Runtime.Status.
func (p *Process) Status(context.Context) ([]runtime.ServiceStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, runtime.ErrClosed
	}
	out := make([]runtime.ServiceStatus, 0, len(p.instances))
	for _, inst := range p.instances {
		out = append(out, inst.status())
	}
	runtime.SortStatuses(out)
	return out, nil
}

// Prune drops instances that are not running and whose spec hash is not in
// keep, with their records; see runtime.Runtime.Prune. Log files are per
// service and stay.
func (p *Process) Prune(_ context.Context, keep ...string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, runtime.ErrClosed
	}
	var pruned []string
	for id, inst := range p.instances {
		if inst.run != nil || inst.stop != nil || slices.Contains(keep, inst.rec.SpecHash) {
			continue
		}
		if err := removeRecord(p.opts.StateDir, id); err != nil {
			return pruned, fmt.Errorf("process runtime: prune %s: %w", id, err)
		}
		delete(p.instances, id)
		pruned = append(pruned, id)
	}
	slices.Sort(pruned)
	return pruned, nil
}

// Close stops the runtime's background work (health checks, log copying,
// watching adopted processes) and closes the log files. Services keep
// running; a New on the same StateDir adopts them. Calls after the first
// return nil.
func (p *Process) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for _, inst := range p.instances {
		if inst.run != nil {
			inst.run.closeLog()
		}
	}
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, l := range p.logs {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// goBackground runs f in a goroutine Close waits for, logging a panic instead
// of crashing the agent.
func (p *Process) goBackground(f func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				p.log.Error("process runtime: background task panicked", "panic", r)
			}
		}()
		f()
	}()
}

// goDetached runs f in a goroutine Close does not wait for (a stop in
// progress, waiting for a child's exit), logging a panic instead of crashing
// the agent.
func (p *Process) goDetached(f func()) {
	go func() {
		defer func() {
			if r := recover(); r != nil {
				p.log.Error("process runtime: task panicked", "panic", r)
			}
		}()
		f()
	}()
}

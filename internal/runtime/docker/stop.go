package docker

import (
	"context"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/mythex/mythex/internal/runtime"
)

// stopOp is one stop of one container, shared by concurrent Stops.
type stopOp struct {
	done   chan struct{}
	result runtime.StopResult
	err    error
}

// Stop stops the running container of the service name as `docker stop`
// does — the engine sends SIGTERM, then SIGKILL once the grace period has
// passed — and keeps it; see runtime.Runtime.Stop. grace is rounded up to
// whole seconds (the Engine API's unit); UseSpecGrace takes the service's
// stop_grace_period from the container's LabelStopGracePeriod. A container
// that Docker is restarting counts as running: the stop cancels the restart.
//
// StopResult.Killed is true when the engine had to SIGKILL: the container
// ended with 137, not out of memory, no sooner than the stop timeout.
// ErrNotFound when the runtime has no container of name; ErrClosed; the
// engine's errors wrapped.
func (d *Docker) Stop(ctx context.Context, name string, grace time.Duration) (runtime.StopResult, error) {
	if d.isClosed() {
		return runtime.StopResult{}, runtime.ErrClosed
	}
	cs, err := d.inspectAll(ctx, name)
	if err != nil {
		return runtime.StopResult{}, fmt.Errorf("docker runtime: stop %s: %w", name, err)
	}
	var target, latest *container.InspectResponse
	for i := range cs {
		c := &cs[i]
		if active(c) {
			target = c
		}
		if latest == nil || dockerTime(c.State.StartedAt).After(dockerTime(latest.State.StartedAt)) {
			latest = c
		}
	}
	if target == nil {
		if latest == nil {
			return runtime.StopResult{}, fmt.Errorf("docker runtime: stop %s: %w", name, runtime.ErrNotFound)
		}
		s := statusOf(*latest, d.marks.get(latest.ID), false)
		return runtime.StopResult{Name: name, ID: latest.ID, ExitCode: s.ExitCode, Signal: s.Signal}, nil
	}
	if grace < 0 {
		grace, err = time.ParseDuration(label(target.Config.Labels, LabelStopGracePeriod))
		if err != nil || grace < 0 {
			grace = 10 * time.Second // Docker's default
		}
	}
	d.mu.Lock()
	op := d.stops[target.ID]
	if op == nil {
		op = &stopOp{done: make(chan struct{})}
		d.stops[target.ID] = op
		id := target.ID
		go d.runStop(name, id, grace, op)
	}
	d.mu.Unlock()
	select {
	case <-op.done:
		return op.result, op.err
	case <-ctx.Done():
		return runtime.StopResult{}, fmt.Errorf("docker runtime: stop %s: %w (the stop goes on)", name, ctx.Err())
	}
}

// runStop carries out one stop and publishes its result on op. It runs on
// its own context: a Stop whose caller gives up still completes, and the
// runtime records its outcome.
func (d *Docker) runStop(name, id string, grace time.Duration, op *stopOp) {
	defer func() {
		if r := recover(); r != nil {
			d.log.Error("docker runtime: stop panicked", "id", short(id), "panic", r)
			op.err = fmt.Errorf("docker runtime: stop %s: panic: %v", name, r)
		}
		d.mu.Lock()
		delete(d.stops, id)
		d.mu.Unlock()
		close(op.done)
	}()
	secs := graceSeconds(grace)
	timeout := time.Duration(secs) * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), timeout+stopTimeoutSlack)
	defer cancel()
	d.log.Info("docker runtime: stopping", "service", name, "id", short(id), "grace", timeout)
	start := d.clock.Now()
	if err := d.cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs}); err != nil {
		op.err = fmt.Errorf("docker runtime: stop %s: container %s: %w", name, short(id), err)
		return
	}
	took := d.clock.Since(start)
	c, err := d.cli.ContainerInspect(ctx, id)
	if err != nil {
		op.err = fmt.Errorf("docker runtime: stop %s: inspect container %s: %w", name, short(id), err)
		return
	}
	killed := wasKilled(c.State.ExitCode, c.State.OOMKilled, took, timeout)
	if killed {
		d.log.Warn("docker runtime: grace period over, the engine killed it", "service", name, "id", short(id), "grace", timeout)
	}
	if err := d.marks.update(id, func(m *mark) {
		m.StoppedFinishedAt, m.Killed = c.State.FinishedAt, killed
	}); err != nil {
		op.err = fmt.Errorf("docker runtime: stop %s: record stop: %w", name, err)
	}
	signal := signalOf(c.State.ExitCode)
	if killed {
		signal = "SIGKILL"
	}
	op.result = runtime.StopResult{
		Name:       name,
		ID:         id,
		WasRunning: true,
		Killed:     killed,
		Took:       took,
		ExitCode:   c.State.ExitCode,
		Signal:     signal,
	}
}

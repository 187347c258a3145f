package agent

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

// stopRecorder is a runtime whose Status lists fixed services and whose Stop
// records the names it was asked to stop.
type stopRecorder struct {
	runtime.Runtime
	sts     []runtime.ServiceStatus
	mu      sync.Mutex
	stopped []string
}

func (r *stopRecorder) Status(context.Context) ([]runtime.ServiceStatus, error) { return r.sts, nil }

func (r *stopRecorder) Stop(_ context.Context, name string, grace time.Duration) (runtime.StopResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if grace != runtime.UseSpecGrace {
		return runtime.StopResult{}, nil
	}
	r.stopped = append(r.stopped, name)
	if name == "gone" {
		return runtime.StopResult{}, runtime.ErrNotFound
	}
	return runtime.StopResult{}, nil
}

func TestStopAll_StopsRunningServicesWithTheirGrace(t *testing.T) {
	t.Parallel()
	rt := &stopRecorder{sts: []runtime.ServiceStatus{
		{Name: "web", State: runtime.StateRunning},
		{Name: "worker", State: runtime.StateRunning},
		{Name: "gone", State: runtime.StateRunning},
		{Name: "old", State: runtime.StateExited},
	}}
	StopAll(rt, slog.New(slog.NewTextHandler(io.Discard, nil)))
	slices.Sort(rt.stopped)
	if want := []string{"gone", "web", "worker"}; !slices.Equal(rt.stopped, want) {
		t.Errorf("stopped %v, want %v (running ones only, each with its own grace)", rt.stopped, want)
	}
}

// heldStarts is a runtime whose Starts, once armed, are held in flight — as
// a spawn the agent has begun — until the agent's own context ends or
// something lists the services (StopAll does, first); then they complete.
type heldStarts struct {
	runtime.Runtime
	armed    atomic.Bool
	held     chan struct{} // closed when the first Start is held
	heldOnce sync.Once
	listed   chan struct{} // closed by the first Status after a held Start
	listOnce sync.Once
}

func (r *heldStarts) Start(ctx context.Context, svc definition.Service) error {
	if r.armed.Load() {
		r.heldOnce.Do(func() { close(r.held) })
		select {
		case <-ctx.Done():
		case <-r.listed:
		}
		return r.Runtime.Start(context.WithoutCancel(ctx), svc)
	}
	return r.Runtime.Start(ctx, svc)
}

func (r *heldStarts) Status(ctx context.Context) ([]runtime.ServiceStatus, error) {
	sts, err := r.Runtime.Status(ctx)
	select {
	case <-r.held:
		r.listOnce.Do(func() { close(r.listed) })
	default:
	}
	return sts, err
}

// TestAgent_ShutdownLeavesNothingRunning: an agent that exits with
// --stop-services-on-exit while the recovery of an expired lease is starting
// the last good version must not leave those services behind (once seen in
// the demo: a publish-worker the recovery started after the stop ran on,
// orphaned, holding its port). Shutdown ends the recovery before it stops the
// services; the other order leaves the held Starts' services running.
func TestAgent_ShutdownLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	var rt *heldStarts
	h := newTestHost(t, func(c *Config) {
		rt = &heldStarts{Runtime: c.Runtime, held: make(chan struct{}), listed: make(chan struct{})}
		c.Runtime = rt
	})
	ctx := ctxT(t)
	h.deployGood(t, ctx, "v1")

	// A deploy that dies after its drain: its lease runs out and the agent
	// recovers the host to v1, whose starts the runtime holds.
	// (Its steps run under a minute's lease, then a last 2 s: a short lease
	// could run out between steps on a loaded machine.)
	l, err := h.client.AcquireLease(ctx, false, "dying deploy", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Publish(ctx, l.ID, h.def("v2", nil)); err != nil {
		t.Fatal(err)
	}
	rt.armed.Store(true)
	if err := h.client.Drain(ctx, l.ID, []string{"gateway"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.RenewLease(ctx, false, l.ID, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rt.held:
	case <-ctx.Done():
		t.Fatal("the recovery never started a service")
	}

	h.agent.Shutdown(true)

	sts, err := rt.Runtime.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.Running() {
			t.Errorf("%s (%s) still runs after Shutdown: it would outlive the agent", s.Name, s.ID)
		}
	}
}

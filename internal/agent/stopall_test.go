package agent

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

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

package docker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/runtime"
)

func TestDocker_StartStopStatus(t *testing.T) {
	e := newEnv(t)
	d := e.newDocker(t, Options{})
	ctx := context.Background()
	svc, port := e.service(t, "api", "v1", nil)
	if err := d.Start(ctx, svc); err != nil {
		t.Fatalf("Start: %v", err)
	}
	s := healthy(t, d, "api")
	if s.Version != "v1" || s.SpecHash != svc.SpecHash() || s.PID == 0 || s.StartedAt.IsZero() {
		t.Errorf("status = %+v", s)
	}
	if body := get(t, port); !strings.Contains(body, "service=api version=v1 host="+e.host) {
		t.Errorf("GET / = %q", body)
	}
	res, err := d.Stop(ctx, "api", runtime.UseSpecGrace)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !res.WasRunning || res.Killed || res.ExitCode != 0 || res.ID != s.ID {
		t.Errorf("stop = %+v, want a clean drain (exit 0, not killed)", res)
	}
	st := waitStatus(t, d, "api", s.ID, "stopped", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateStopped })
	if st.Health.Status != runtime.HealthNone || st.FinishedAt.IsZero() {
		t.Errorf("stopped status = %+v", st)
	}
	if _, err := d.Stop(ctx, "nope", 0); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Stop(nope) = %v, want ErrNotFound", err)
	}
}

package docker

import (
	"context"
	"maps"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

// TestDocker_Timings measures, on this machine's engine, the median of N
// (MYTHEX_DOCKER_TIMINGS=N) rounds of: create+start of a new container until
// it runs and until Docker reports it healthy (healthcheck every 100ms), stop
// (drain serve period 0), and start of the same, stopped container until
// healthy (what a rollback costs). It only reports; it skips unless asked.
//
//	MYTHEX_DOCKER_TIMINGS=10 go test -run TestDocker_Timings -v ./internal/runtime/docker
func TestDocker_Timings(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("MYTHEX_DOCKER_TIMINGS"))
	if n <= 0 {
		t.Skip("set MYTHEX_DOCKER_TIMINGS=N to measure N rounds")
	}
	e := newEnv(t)
	d := e.newDocker(t, Options{KeepImages: true}) // the test image is shared
	ctx := context.Background()
	base, _ := e.service(t, "api", "v0", map[string]string{"MYTHEX_APP_DRAIN_SERVE_PERIOD": "0s"})
	base.Healthcheck.Interval = 100 * time.Millisecond
	var startCall, running, healthyAt, stop, restartHealthy []time.Duration
	for i := range n {
		svc := base
		svc.Version = "v" + strconv.Itoa(i+1)
		svc.Environment = maps.Clone(base.Environment)
		svc.Environment[definition.EnvVersion] = svc.Version
		t0 := time.Now()
		if err := d.Start(ctx, svc); err != nil {
			t.Fatal(err)
		}
		startCall = append(startCall, time.Since(t0))
		waitStatus(t, d, "api", "", "running", func(s runtime.ServiceStatus) bool { return s.Running() && s.Version == svc.Version })
		running = append(running, time.Since(t0))
		healthy(t, d, "api")
		healthyAt = append(healthyAt, time.Since(t0))
		t1 := time.Now()
		if _, err := d.Stop(ctx, "api", runtime.UseSpecGrace); err != nil {
			t.Fatal(err)
		}
		stop = append(stop, time.Since(t1))
		t2 := time.Now()
		if err := d.Start(ctx, svc); err != nil {
			t.Fatal(err)
		}
		healthy(t, d, "api")
		restartHealthy = append(restartHealthy, time.Since(t2))
		if _, err := d.Stop(ctx, "api", runtime.UseSpecGrace); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Prune(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("median of %d on this engine: Start (create+start) %v; running %v; healthy %v; Stop %v; Start of the stopped container until healthy %v",
		n, median(startCall), median(running), median(healthyAt), median(stop), median(restartHealthy))
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/demo"
	"github.com/mythex/mythex/internal/runtime/docker/dockertest"
	"github.com/mythex/mythex/internal/testbin"
)

// TestDemo_DockerRuntimeDropsNothing runs the Docker demo end to end: the
// image of the static mythex, each host's agent on the Docker runtime, a
// deploy under load that must drop nothing. A mythex built with cgo on (as
// `go run ./cmd/mythex demo --runtime docker` makes it on most machines) gets
// a static build for its image from docker.StaticBinary, which the demo
// calls first; that build is TestStaticBinary's (internal/runtime/docker), so
// this test hands the demo a static mythex, used as it is, and spends its
// time on the deploy.
func TestDemo_DockerRuntimeDropsNothing(t *testing.T) {
	t.Parallel()
	bin := mythexBin(t)
	testbin.Exclusive(t, testbin.DockerStartsLock) // not beside the deployer-kill cases
	testbin.FleetSlotFirst(t)                      // after the Exclusive lock, never before; the longest fleet
	dockertest.Engine(t)                           // skips with no engine
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	sum, err := demo.Run(ctx, demo.Options{Profile: demo.ProfileAfter, TimeScale: testScale, Hosts: 2, Rate: 50, Deploys: 1, Exe: bin, Dir: fleetDir(t), Runtime: demo.RuntimeDocker, ProbeTimeout: testProbeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Deploys) != 1 || !sum.Deploys[0].OK {
		t.Fatalf("deploys = %+v", sum.Deploys)
	}
	d := sum.Deploys[0]
	if sum.ReachedNothing != 0 || sum.AppErrors != 0 {
		t.Errorf("reached nothing %d, app errors %d; want 0 (probe %+v)", sum.ReachedNothing, sum.AppErrors, d.Probe)
	}
	if last := d.Versions[len(d.Versions)-1]; strings.Join(last.Versions, ",") != "v2" {
		t.Errorf("at the end the fleet answers %v, want v2 only (spans %+v)", last.Versions, d.Versions)
	}
}

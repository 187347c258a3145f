package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/mythex/mythex/internal/runtime/docker"
)

// dockerStartTimeout bounds how long an agent of the Docker demo waits for a
// host's services to turn healthy.
const dockerStartTimeout = 90 * time.Second

// dockerHealthTimeout bounds one Docker healthcheck of the Docker demo.
const dockerHealthTimeout = 5 * time.Second

// dockerHealthInterval is the least pace of the Docker demo's container
// healthchecks (HEALTH_INTERVAL in examples/docker/compose.yaml), and
// dockerStartInterval the pace of the first looks while a container boots.
// Each check execs the mythex binary inside the container, about 0.4 s of
// CPU with runc's and the engine's share: at the LB's scaled-down interval
// (0.5 s at the tests' scale) eight containers kept two cores busy with
// checks alone (measured: one Docker demo alone held the machine at
// 75–98 %), and at 2 s the checks of one scaled-down Docker demo still cost
// about 60 s of CPU. Once a container has passed, Docker's checks only keep
// its health for the watchdog. The LB's
// own checks, which decide rotation, keep the fleet's numbers; the
// container's health only paces the watchdog and a start's wait. The first
// looks cost the same: on an engine before Docker 25 the runtime execs them
// itself until one passes, and a host starts four containers at once (a
// first rollout, eight) — at 250 ms that was a burst of tens of execs, with
// runc's init about 0.4 s of CPU each, which starved fleets beside it in a
// full test run. One a second costs a start at most that second.
const (
	dockerHealthInterval = 5 * time.Second
	dockerStartInterval  = time.Second
)

// dockerFleet is what the demo holds on the Docker engine: the sample app
// image it built (tagged once per version deployed) and the label on every
// container and network its agents create, so that Close removes exactly
// what the demo made.
type dockerFleet struct {
	cli     *client.Client
	imageID string
	// repo is the image repository, mythex-demo-<run>/app; version v runs
	// repo:v.
	repo string
	// label is "mythex.demo=<run>", given to the agents (--docker-label).
	label string
}

// startDocker connects to the local engine and builds the sample app image
// from exe; the image is FROM scratch, so a dynamically linked exe (cgo on)
// is replaced by a static build from source, written into dir.
func startDocker(ctx context.Context, exe, dir string) (*dockerFleet, error) {
	exe, err := docker.StaticBinary(ctx, exe, dir, os.Stderr)
	if err != nil {
		return nil, fmt.Errorf("the Docker demo puts a static mythex binary in a FROM scratch image: %w", err)
	}
	cli, err := docker.Connect(ctx, "")
	if err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	run := hex.EncodeToString(b[:])
	f := &dockerFleet{cli: cli, repo: "mythex-demo-" + run + "/app", label: "mythex.demo=" + run}
	f.imageID, err = docker.BuildImage(ctx, cli, docker.ImageOptions{Binary: exe, Tags: []string{f.repo + ":build"}, Labels: map[string]string{"mythex.demo": run}})
	if err != nil {
		cli.Close()
		return nil, err
	}
	return f, nil
}

// tag makes repo:version name the demo's image.
func (f *dockerFleet) tag(ctx context.Context, version string) error {
	if err := f.cli.ImageTag(ctx, f.imageID, f.repo+":"+version); err != nil {
		return fmt.Errorf("tag the demo image %s: %w", version, err)
	}
	return nil
}

// close removes the demo's containers, networks and image, and closes the
// client. A network another fleet still uses stays.
func (f *dockerFleet) close() error {
	ctx := context.Background()
	defer f.cli.Close()
	var errs []error
	byLabel := filters.NewArgs(filters.Arg("label", f.label))
	cs, err := f.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: byLabel})
	errs = append(errs, err)
	for _, c := range cs {
		errs = append(errs, f.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}))
	}
	ns, _ := f.cli.NetworkList(ctx, network.ListOptions{Filters: byLabel})
	for _, n := range ns {
		_ = f.cli.NetworkRemove(ctx, n.ID)
	}
	_, err = f.cli.ImageRemove(ctx, f.imageID, image.RemoveOptions{Force: true, PruneChildren: true})
	errs = append(errs, err)
	return errors.Join(errs...)
}

// Package docker is the Docker runtime: each service of the definition runs
// as a container, created, started, stopped and inspected through the Docker
// Engine API (the Go SDK, never the docker CLI), from the compose definition:
// image, entrypoint and command, environment, labels, ports, networks,
// stop_grace_period (the container's StopTimeout), healthcheck (Docker runs
// it) and restart policy (Docker applies it).
//
// # Instances are containers
//
// An instance is one container per host, service and spec hash, named
// "mythex-<host>-<service>-<12 hex of the spec hash>" and labeled with
// LabelHost, LabelService, LabelVersion and LabelSpecHash. Stop stops it
// (docker stop: SIGTERM, SIGKILL after the grace) and keeps it: Start of the
// same spec starts the same container again (the same container ID), so a
// rollback restores the previous version rather than recreating it. Prune
// removes stopped containers whose spec is no longer wanted, and then their
// images when nothing else uses them.
//
// # Restart policy
//
// Unlike the process runtime, this runtime hands the compose restart policy
// to Docker. While Docker restarts a container (its "restarting" state),
// Status reports runtime.StateRestarting, which the watchdog leaves to Docker
// instead of restarting it a second time.
//
// # What Docker does not keep
//
// Docker's inspect does not say whether a container exited on its own or
// was stopped. The runtime records the exits its Stops caused (and how many
// times Start restarted a container) in Options.StateDir, so an agent that
// restarts still tells a crash (exited) from a stop (stopped). Containers
// outlive the agent: a new runtime on the same engine, host and labels finds
// them by their labels, including those an older mythex labeled with the
// legacy keys (mythex.managed, … before io.mythex.*; see legacyKeys).
//
// # Engines
//
// The runtime negotiates the Engine API version, from API 1.41 (Docker
// 20.10). On engines before API 1.44 (Docker 25) healthcheck.start_interval
// is not sent (Docker would check at interval during the start period too):
// the runtime runs the start-interval checks itself through the exec
// endpoints, until the first success, and Status reports that run healthy
// while Docker still says "starting" (see startinterval.go).
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

var _ runtime.Runtime = (*Docker)(nil)

// Options configure a Docker runtime. Zero values take the documented
// defaults.
type Options struct {
	// Client is the Engine API client (see Connect). Required. The runtime
	// does not close it.
	Client client.APIClient
	// StateDir holds the runtime's record of its stops (the file
	// docker-containers.json). Required; created 0700 if missing; a
	// directory of the host agent's state.
	StateDir string
	// Host is the fleet host this runtime runs services for (hosts[].name):
	// every container gets LabelHost=Host, and the runtime sees only
	// containers with that label, so several hosts (as in the local demo)
	// can share one engine. Start refuses a service resolved for another
	// host (its MYTHEX_HOST).
	Host string
	// Labels are extra labels put on every container and network the
	// runtime creates, and required of every container it sees: a further
	// scope (tests use a unique label per run). Keys must not be the
	// runtime's own (LabelManaged, LabelHost, …).
	Labels map[string]string
	// KeepVersions makes Prune also keep, per service, this many of the
	// most recently run stopped containers, whether or not its keep list
	// names them. Default 0: Prune keeps exactly what it is told to (the
	// host agent passes the current, previous and last known good
	// definitions).
	KeepVersions int
	// KeepImages stops Prune from removing the images of the containers it
	// removes.
	KeepImages bool
	// NeverPull makes Start fail when the image is not on the engine instead
	// of pulling it (compose's pull_policy: never).
	NeverPull bool
	// Clock measures stops and paces the start-interval checks the runtime
	// runs on engines before API 1.44. Default the real clock.
	Clock clockwork.Clock
	// Logger receives the runtime's own events (creates, stops, prunes).
	// Default: discarded.
	Logger *slog.Logger
}

// Docker is the Docker runtime. Create it with New; it is safe for
// concurrent use.
type Docker struct {
	cli   client.APIClient
	opts  Options
	scope scope
	marks *marks
	clock clockwork.Clock
	log   *slog.Logger
	// checks runs healthcheck start_interval on engines that lack it.
	checks *startChecks

	mu       sync.Mutex
	closed   bool
	stops    map[string]*stopOp     // stops in progress, by container ID
	services map[string]*sync.Mutex // serialises Start and Prune per service
	networks sync.Mutex             // serialises network creation
}

// New returns the Docker runtime for opts. It does not touch the engine:
// containers are found by their labels when needed. Errors: a missing Client
// or StateDir, reserved label keys in Labels, an unreadable state file.
func New(opts Options) (*Docker, error) {
	if opts.Client == nil {
		return nil, errors.New("docker runtime: Options.Client is required (see docker.Connect)")
	}
	if opts.StateDir == "" {
		return nil, errors.New("docker runtime: Options.StateDir is required")
	}
	for k := range opts.Labels {
		if slices.Contains(reservedLabels, k) {
			return nil, fmt.Errorf("docker runtime: Options.Labels: %s is the runtime's own label", k)
		}
	}
	ms, err := loadMarks(opts.StateDir)
	if err != nil {
		return nil, fmt.Errorf("docker runtime: %w", err)
	}
	clock := opts.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Docker{
		cli:      opts.Client,
		opts:     opts,
		scope:    scope{host: opts.Host, labels: maps.Clone(opts.Labels)},
		marks:    ms,
		clock:    clock,
		log:      log,
		checks:   newStartChecks(opts.Client, clock, log),
		stops:    map[string]*stopOp{},
		services: map[string]*sync.Mutex{},
	}, nil
}

// Start runs svc as a container; see runtime.Runtime.Start. A container of
// exactly svc's spec that is running (or being restarted by Docker) is left
// alone; one that is stopped or exited is started again — the same
// container, same ID; otherwise a new container is created (pulling the
// image if the engine lacks it, unless NeverPull) and started. Start returns
// once Docker has started the container's process, not once it is healthy.
// On an engine before API 1.44 whose healthcheck has a start_period and a
// start_interval, the runtime then runs the check every start_interval
// itself until it first passes (see startinterval.go).
//
// Errors: ErrUnsupported without an image; definition.ErrInvalid for an
// invalid service or one the Docker runtime cannot honour (see buildSpec);
// ErrConflict when a container of another spec of the service is running, or
// this one is being stopped; ErrClosed; the engine's errors (a missing image
// that cannot be pulled, a port already allocated) wrapped.
func (d *Docker) Start(ctx context.Context, svc definition.Service) error {
	if svc.Image == "" {
		return fmt.Errorf("docker runtime: start %s: no image in its compose service: %w", svc.Name, runtime.ErrUnsupported)
	}
	if err := svc.Validate(); err != nil {
		return fmt.Errorf("docker runtime: start %s: %w", svc.Name, err)
	}
	if h := svc.Environment[definition.EnvHost]; h != "" && h != d.opts.Host {
		return fmt.Errorf("docker runtime: start %s: the service was resolved for host %q but this runtime runs host %q", svc.Name, h, d.opts.Host)
	}
	spec, err := buildSpec(svc, d.scope, d.cli.ClientVersion())
	if err != nil {
		return fmt.Errorf("docker runtime: start %s: %w", svc.Name, err)
	}
	unlock, err := d.lockService(svc.Name)
	if err != nil {
		return err
	}
	defer unlock()

	cs, err := d.inspectAll(ctx, svc.Name)
	if err != nil {
		return fmt.Errorf("docker runtime: start %s: %w", svc.Name, err)
	}
	want := svc.SpecHash()
	var existing *container.InspectResponse
	for i := range cs {
		c := &cs[i]
		if label(c.Config.Labels, LabelSpecHash) == want {
			existing = c
		}
		if !active(c) {
			continue
		}
		if d.stopping(c.ID) {
			return fmt.Errorf("docker runtime: start %s version %s: container %s is stopping; start it again once Stop returns: %w",
				svc.Name, svc.Version, short(c.ID), runtime.ErrConflict)
		}
		if label(c.Config.Labels, LabelSpecHash) == want {
			return nil
		}
		return fmt.Errorf("docker runtime: start %s version %s: container %s (version %s) is running: %w",
			svc.Name, svc.Version, short(c.ID), label(c.Config.Labels, LabelVersion), runtime.ErrConflict)
	}
	id := ""
	if existing != nil {
		id, err = existing.ID, d.restart(ctx, svc.Name, existing.ID)
	} else {
		id, err = d.create(ctx, svc, spec)
	}
	if err == nil && needsStartInterval(svc.Healthcheck, d.cli.ClientVersion()) {
		d.checks.start(svc.Name, id, *svc.Healthcheck)
	}
	return err
}

// restart starts the existing container id again and counts it.
func (d *Docker) restart(ctx context.Context, name, id string) error {
	if err := d.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return fmt.Errorf("docker runtime: start %s: container %s: %w", name, short(id), err)
	}
	d.log.Info("docker runtime: started existing container", "service", name, "id", short(id))
	if err := d.marks.update(id, func(m *mark) {
		m.Starts++
		m.StoppedFinishedAt, m.Killed = "", false
	}); err != nil {
		// A start that cannot be recorded fails, and what it started does
		// not stay behind: the old mark would call this container stopped
		// while it runs.
		if kerr := d.cli.ContainerKill(context.WithoutCancel(ctx), id, "SIGKILL"); kerr != nil {
			d.log.Error("docker runtime: could not kill the container whose start was not recorded", "service", name, "id", short(id), "err", kerr)
		}
		return fmt.Errorf("docker runtime: start %s: record restart: %w; the container was killed", name, err)
	}
	return nil
}

// create creates svc's container from spec and starts it; it returns the
// container's ID.
func (d *Docker) create(ctx context.Context, svc definition.Service, spec containerSpec) (string, error) {
	ids, err := d.ensureNetworks(ctx, svc.Networks)
	if err != nil {
		return "", fmt.Errorf("docker runtime: start %s: %w", svc.Name, err)
	}
	spec = withNetworkIDs(spec, ids)
	resp, err := d.cli.ContainerCreate(ctx, spec.Config, spec.Host, spec.Networking, nil, spec.Name)
	if cerrdefs.IsNotFound(err) && !d.opts.NeverPull {
		if perr := d.pull(ctx, svc.Image); perr != nil {
			return "", fmt.Errorf("docker runtime: start %s: image %s is not on the engine and pulling it failed: %w; build it (mythex image build --tag %s) or make its registry reachable", svc.Name, svc.Image, perr, svc.Image)
		}
		resp, err = d.cli.ContainerCreate(ctx, spec.Config, spec.Host, spec.Networking, nil, spec.Name)
	}
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("docker runtime: start %s: %w; build the image (mythex image build --tag %s) or pull it", svc.Name, err, svc.Image)
		}
		return "", fmt.Errorf("docker runtime: start %s: create container %s: %w", svc.Name, spec.Name, err)
	}
	for _, n := range spec.Connect {
		if err := d.cli.NetworkConnect(ctx, n, resp.ID, &network.EndpointSettings{NetworkID: n}); err != nil {
			return "", fmt.Errorf("docker runtime: start %s: connect container %s to network %s: %w", svc.Name, short(resp.ID), n, err)
		}
	}
	if err := d.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		return "", fmt.Errorf("docker runtime: start %s: container %s: %w%s", svc.Name, short(resp.ID), err, portHolderNote(svc, err))
	}
	d.log.Info("docker runtime: created and started container", "service", svc.Name, "version", svc.Version, "id", short(resp.ID), "name", spec.Name)
	return resp.ID, nil
}

// portHolderNote names who holds a published port when the engine refused
// to start a container because the port is taken ("" otherwise): the
// engine's message names only the port.
func portHolderNote(svc definition.Service, err error) string {
	msg := err.Error()
	if !strings.Contains(msg, "address already in use") && !strings.Contains(msg, "port is already allocated") {
		return ""
	}
	for _, p := range svc.Ports {
		if h, held := runtime.PortHolder(p.Published); held {
			return fmt.Sprintf("; port %d (ports of %s) is held by %s: stop it or change the port", p.Published, svc.Name, h)
		}
	}
	return ""
}

// pull pulls ref, reading the progress stream to its end.
func (d *Docker) pull(ctx context.Context, ref string) error {
	rc, err := d.cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	return jsonmessage.DisplayJSONMessagesStream(rc, io.Discard, 0, false, nil)
}

// Status reports every container of the runtime's host and labels; see
// runtime.Runtime.Status and statusOf for how Docker's states map.
func (d *Docker) Status(ctx context.Context) ([]runtime.ServiceStatus, error) {
	if d.isClosed() {
		return nil, runtime.ErrClosed
	}
	cs, err := d.inspectAll(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("docker runtime: status: %w", err)
	}
	out := make([]runtime.ServiceStatus, 0, len(cs))
	for _, c := range cs {
		out = append(out, d.checks.apply(statusOf(c, d.marks.get(c.ID), d.stopping(c.ID)), c))
	}
	runtime.SortStatuses(out)
	return out, nil
}

// Close marks the runtime closed: later calls return ErrClosed. Containers
// keep running, and Stops in progress finish (the engine carries them out);
// the start-interval checks end, and Close waits for them. The client is the
// caller's to close.
func (d *Docker) Close() error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.checks.close()
	return nil
}

// inspectAll inspects every container in the runtime's scope (of service
// only, when not empty), labeled with the current keys or the legacy ones
// (see legacyKeys). A container removed between list and inspect is skipped.
func (d *Docker) inspectAll(ctx context.Context, service string) ([]container.InspectResponse, error) {
	var ids []string
	for _, f := range d.scope.filters(service) {
		list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			if !slices.Contains(ids, s.ID) {
				ids = append(ids, s.ID)
			}
		}
	}
	out := make([]container.InspectResponse, 0, len(ids))
	for _, id := range ids {
		c, err := d.cli.ContainerInspect(ctx, id)
		if cerrdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if c.Config == nil || c.State == nil || !d.scope.owns(c.Config.Labels, service) {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// lockService takes service's lock; the returned func releases it.
func (d *Docker) lockService(service string) (func(), error) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, runtime.ErrClosed
	}
	l, ok := d.services[service]
	if !ok {
		l = &sync.Mutex{}
		d.services[service] = l
	}
	d.mu.Unlock()
	l.Lock()
	return l.Unlock, nil
}

func (d *Docker) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

// stopping reports whether a Stop of container id is in progress.
func (d *Docker) stopping(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stops[id] != nil
}

// active reports whether the container is running, paused or being
// restarted by Docker: one the service counts as up, or on its way back.
func active(c *container.InspectResponse) bool {
	switch c.State.Status {
	case container.StateRunning, container.StatePaused, container.StateRestarting:
		return true
	}
	return false
}

// short is the 12-hex short form of a container ID, as docker ps shows it.
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// stopTimeoutSlack bounds how long a stop may take beyond its grace before
// the runtime gives up waiting for the engine.
const stopTimeoutSlack = time.Minute

// Package docker is a machines platform on the Docker Engine API (through the
// official SDK, with API version negotiation): each machine is a container
// labelled with its app and machine id; its restart policy is Docker's (no,
// always, on-failure with a maximum retry count); its state, restart count,
// start and finish times and exit code come from container inspect; its
// events from the daemon's event log (create, start, kill, oom, die),
// newest first and bounded. Docker cannot change a container's image, so an
// update replaces the container (a new instance of the same machine); the
// image is never removed — restoring a release recreates its container from
// the image still on the host.
package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"
	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/platform"
)

// Labels mythex puts on its containers.
const (
	// LabelApp names the app a container belongs to.
	LabelApp = "io.mythex.app"
	// LabelMachine is the machine id, stable across updates.
	LabelMachine = "io.mythex.machine"
	// LabelInstance counts the machine's versions (containers).
	LabelInstance = "io.mythex.instance"
	// LabelConfig holds the machine's platform.Config as JSON.
	LabelConfig = "io.mythex.config"
)

// Options configure a Platform.
type Options struct {
	// Client talks to the daemon. Default: from the environment (DOCKER_HOST
	// and friends) with API version negotiation.
	Client *client.Client
	// Host is the address container ports are published on. Default 127.0.0.1.
	Host string
	// MaxEvents bounds the events returned per machine (newest kept). Default 10.
	MaxEvents int
	// StopTimeout is the grace period of a stop before SIGKILL. Default 10s
	// (Docker's default).
	StopTimeout time.Duration
	// Clock times Wait's polling. Default real.
	Clock clockwork.Clock
}

// Platform is a platform.Platform on a Docker daemon.
type Platform struct {
	cli  *client.Client
	opts Options
}

var _ platform.Platform = (*Platform)(nil)

// New returns a Platform; it does not contact the daemon (see Ping). mythex
// passes the client of runtime/docker.Connect (pinged, Engine API 1.41 or
// later), so both Docker packages reach the engine the same way; without
// one, New makes an unchecked client from the environment.
func New(opts Options) (*Platform, error) {
	if opts.Client == nil {
		c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		if err != nil {
			return nil, fmt.Errorf("docker client: %w", err)
		}
		opts.Client = c
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = 10
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 10 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	return &Platform{cli: opts.Client, opts: opts}, nil
}

// Ping checks that the daemon answers; the error wraps
// platform.ErrUnavailable when it does not.
func (p *Platform) Ping(ctx context.Context) error {
	if _, err := p.cli.Ping(ctx); err != nil {
		return fmt.Errorf("docker daemon: %w: %w", platform.ErrUnavailable, err)
	}
	return nil
}

// Close releases the client's connections.
func (p *Platform) Close() error { return p.cli.Close() }

// Name returns "docker".
func (p *Platform) Name() string { return "docker" }

// mapErr wraps Docker errors with the platform sentinels.
func mapErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%s: %w: %w", op, platform.ErrNotFound, err)
	case cerrdefs.IsConflict(err), cerrdefs.IsFailedPrecondition(err):
		return fmt.Errorf("%s: %w: %w", op, platform.ErrConflict, err)
	case cerrdefs.IsInvalidArgument(err):
		return fmt.Errorf("%s: %w: %w", op, platform.ErrInvalid, err)
	case client.IsErrConnectionFailed(err), cerrdefs.IsUnavailable(err), cerrdefs.IsInternal(err):
		return fmt.Errorf("%s: %w: %w", op, platform.ErrUnavailable, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w: %w", op, platform.ErrTimeout, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// CheckImage implements platform.ImageChecker: the image must be on this
// host (mythex never pulls).
func (p *Platform) CheckImage(ctx context.Context, image string) error {
	if _, err := p.cli.ImageInspect(ctx, image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("%w: %s is not on this host (mythex never pulls: build or load it first)", platform.ErrImageNotFound, image)
		}
		return mapErr("inspect image "+image, err)
	}
	return nil
}

var _ platform.ImageChecker = (*Platform)(nil)

func (p *Platform) containers(ctx context.Context, app, id string) ([]container.Summary, error) {
	f := filters.NewArgs(filters.Arg("label", LabelApp+"="+app))
	if id != "" {
		f.Add("label", LabelMachine+"="+id)
	}
	cs, err := p.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, mapErr("list containers of "+app, err)
	}
	return cs, nil
}

// container returns the id of machine id's current container.
func (p *Platform) container(ctx context.Context, app, id string) (string, error) {
	cs, err := p.containers(ctx, app, id)
	if err != nil {
		return "", err
	}
	if len(cs) == 0 {
		return "", fmt.Errorf("machine %s of app %s: %w", id, app, platform.ErrNotFound)
	}
	// An update removes the old container first; should two exist, the newest wins.
	sort.Slice(cs, func(i, j int) bool { return cs[i].Created > cs[j].Created })
	return cs[0].ID, nil
}

// List implements platform.Platform.
func (p *Platform) List(ctx context.Context, app string) ([]platform.Machine, error) {
	cs, err := p.containers(ctx, app, "")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []platform.Machine
	sort.Slice(cs, func(i, j int) bool { return cs[i].Created > cs[j].Created })
	for _, c := range cs {
		id := c.Labels[LabelMachine]
		if seen[id] {
			continue
		}
		seen[id] = true
		m, err := p.inspect(ctx, app, c.ID)
		if errors.Is(err, platform.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Get implements platform.Platform.
func (p *Platform) Get(ctx context.Context, app, id string) (platform.Machine, error) {
	cid, err := p.container(ctx, app, id)
	if err != nil {
		return platform.Machine{}, err
	}
	return p.inspect(ctx, app, cid)
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() < 2000 {
		return time.Time{}
	}
	return t
}

// inspect builds the machine from one container.
func (p *Platform) inspect(ctx context.Context, app, cid string) (platform.Machine, error) {
	ci, err := p.cli.ContainerInspect(ctx, cid)
	if err != nil {
		return platform.Machine{}, mapErr("inspect container "+cid, err)
	}
	labels := ci.Config.Labels
	m := platform.Machine{ID: labels[LabelMachine], Name: strings.TrimPrefix(ci.Name, "/"), App: app, InstanceID: ci.ID,
		ImageRef: ci.Image, RestartCount: ci.RestartCount, HasRestartCount: true, CreatedAt: parseTime(ci.Created)}
	if err := json.Unmarshal([]byte(labels[LabelConfig]), &m.Config); err != nil {
		m.Config = platform.Config{Image: ci.Config.Image}
	}
	st := ci.State
	m.State = stateOf(st)
	if st.Running || st.Paused || st.Restarting {
		m.StartedAt = parseTime(st.StartedAt)
	}
	m.UpdatedAt = m.CreatedAt
	if t := parseTime(st.FinishedAt); t.After(m.UpdatedAt) {
		m.UpdatedAt = t
	}
	if t := parseTime(st.StartedAt); t.After(m.UpdatedAt) {
		m.UpdatedAt = t
	}
	if m.Config.Port > 0 && ci.NetworkSettings != nil {
		for _, b := range ci.NetworkSettings.Ports[nat.Port(fmt.Sprintf("%d/tcp", m.Config.Port))] {
			if b.HostPort != "" {
				host := b.HostIP
				if host == "" || host == "0.0.0.0" {
					host = p.opts.Host
				}
				m.Address = net.JoinHostPort(host, b.HostPort)
				break
			}
		}
	}
	ev, err := p.events(ctx, ci)
	if err != nil {
		return platform.Machine{}, err
	}
	m.Events = ev
	return m, nil
}

// stateOf maps Docker's container state to a machine state.
func stateOf(st *container.State) platform.State {
	if st == nil {
		return platform.StateCreated
	}
	switch {
	case st.Paused:
		return platform.StateSuspended
	case st.Restarting:
		return platform.StateRestarting
	case st.Running:
		return platform.StateStarted
	}
	switch st.Status {
	case "created":
		return platform.StateCreated
	case "removing":
		return platform.StateDestroying
	case "dead":
		return platform.StateFailed
	}
	return platform.StateStopped
}

// events reads the container's events from the daemon's event log (from its
// creation until now) and maps them to machine events, newest first: create
// is launch, start is start, die is exit (code from its exitCode attribute;
// requested when a kill came through the API since the last start;
// restarting when the daemon started it again after), pause and unpause are
// suspend and resume. The daemon keeps a bounded log; MaxEvents bounds it
// again.
func (p *Platform) events(ctx context.Context, ci container.InspectResponse) ([]platform.Event, error) {
	since := parseTime(ci.Created)
	if since.IsZero() {
		since = p.opts.Clock.Now().Add(-time.Hour)
	}
	until := p.opts.Clock.Now() // the daemon holds the stream open until then
	f := filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)), filters.Arg("container", ci.ID))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs, errs := p.cli.Events(ctx, events.ListOptions{Since: unixNano(since.Add(-time.Second)), Until: unixNano(until), Filters: f})
	var raw []events.Message
loop:
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				break loop
			}
			raw = append(raw, m)
		case err := <-errs:
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, mapErr("events of "+ci.ID, err)
			}
			break loop
		}
	}
	sort.SliceStable(raw, func(i, j int) bool { return raw[i].TimeNano < raw[j].TimeNano })
	var out []platform.Event // oldest first while building
	killed, oom, restarts := false, false, 0
	for i, m := range raw {
		at := time.Unix(0, m.TimeNano).UTC()
		switch m.Action {
		case events.ActionCreate:
			out = append(out, platform.Event{Type: platform.EventLaunch, Status: "created", Source: "user", Timestamp: at})
		case events.ActionStart:
			killed, oom = false, false
			out = append(out, platform.Event{Type: platform.EventStart, Status: "started", Source: "docker", Timestamp: at})
		case events.ActionKill:
			killed = true
		case events.ActionOOM:
			oom = true
		case events.ActionPause:
			out = append(out, platform.Event{Type: platform.EventSuspend, Status: "suspended", Source: "user", Timestamp: at})
		case events.ActionUnPause:
			out = append(out, platform.Event{Type: platform.EventResume, Status: "started", Source: "user", Timestamp: at})
		case events.ActionDie:
			code, _ := strconv.Atoi(m.Actor.Attributes["exitCode"])
			restarting := false
			if !killed {
				// Restarted by the daemon: a start follows without an API call
				// (or, for the newest exit, the container is restarting now).
				for _, n := range raw[i+1:] {
					if n.Action == events.ActionStart {
						restarting = true
						break
					}
					if n.Action == events.ActionKill || n.Action == events.ActionStop || n.Action == events.ActionDestroy {
						break
					}
				}
				if !restarting && ci.State != nil && ci.State.Restarting {
					restarting = true
				}
			}
			if restarting {
				restarts++
			}
			// Docker reports a process killed by a signal as exit code
			// 128+signal (137 for SIGKILL, the OOM killer's too): show it as
			// the signal.
			sig := 0
			if code > 128 && code <= 128+64 {
				sig = code - 128
			}
			out = append(out, platform.Event{Type: platform.EventExit, Status: "stopped", Source: "docker", Timestamp: at, RestartCount: restarts,
				Exit: &platform.Exit{ExitCode: code, Signal: sig, OOMKilled: oom, RequestedStop: killed, Restarting: restarting, ExitedAt: at}})
		}
	}
	newest := make([]platform.Event, 0, len(out))
	for i := len(out) - 1; i >= 0; i-- {
		newest = append(newest, out[i])
	}
	return platform.TrimEvents(newest, p.opts.MaxEvents), nil
}

func unixNano(t time.Time) string {
	return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond())
}

// Create implements platform.Platform: a container from cfg.Image (which
// must be on the host: no registry is contacted), cfg.Args as its command,
// cfg.Port published on Options.Host at a port Docker picks, and Docker's
// restart policy; then started.
func (p *Platform) Create(ctx context.Context, app string, cfg platform.Config) (platform.Machine, error) {
	if err := cfg.Validate(); err != nil {
		return platform.Machine{}, err
	}
	id := newID()
	cid, err := p.create(ctx, app, id, 1, cfg)
	if err != nil {
		return platform.Machine{}, err
	}
	if err := p.cli.ContainerStart(ctx, cid, container.StartOptions{}); err != nil {
		return platform.Machine{}, mapErr("start machine "+id, err)
	}
	return p.inspect(ctx, app, cid)
}

func (p *Platform) create(ctx context.Context, app, id string, instance int, cfg platform.Config) (string, error) {
	if err := p.CheckImage(ctx, cfg.Image); err != nil {
		return "", err
	}
	cj, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	env := make([]string, 0, len(cfg.Env))
	for k, v := range cfg.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	r := cfg.Restart.Effective()
	rp := container.RestartPolicy{Name: container.RestartPolicyMode(r.Policy)}
	if r.Policy == platform.RestartOnFailure {
		rp.MaximumRetryCount = r.MaxRetries
	}
	stop := int(p.opts.StopTimeout.Seconds())
	cc := &container.Config{Image: cfg.Image, Env: env, StopTimeout: &stop,
		Labels: map[string]string{LabelApp: app, LabelMachine: id, LabelInstance: strconv.Itoa(instance), LabelConfig: string(cj)}}
	if len(cfg.Args) > 0 {
		cc.Cmd = cfg.Args
	}
	hc := &container.HostConfig{RestartPolicy: rp}
	if cfg.Port > 0 {
		port := nat.Port(fmt.Sprintf("%d/tcp", cfg.Port))
		cc.ExposedPorts = nat.PortSet{port: struct{}{}}
		hc.PortBindings = nat.PortMap{port: {{HostIP: p.opts.Host, HostPort: ""}}}
	}
	name := fmt.Sprintf("mythex-%s-%s-%d", app, id, instance)
	resp, err := p.cli.ContainerCreate(ctx, cc, hc, nil, nil, name)
	if err != nil {
		return "", mapErr("create machine "+id, err)
	}
	return resp.ID, nil
}

// Update implements platform.Platform: the machine's container is stopped and
// removed (never its image) and a new one created and started from cfg, as
// the machine's next instance.
func (p *Platform) Update(ctx context.Context, app, id string, cfg platform.Config) (platform.Machine, error) {
	if err := cfg.Validate(); err != nil {
		return platform.Machine{}, err
	}
	cid, err := p.container(ctx, app, id)
	if err != nil {
		return platform.Machine{}, err
	}
	ci, err := p.cli.ContainerInspect(ctx, cid)
	if err != nil {
		return platform.Machine{}, mapErr("inspect machine "+id, err)
	}
	instance, _ := strconv.Atoi(ci.Config.Labels[LabelInstance])
	if err := p.CheckImage(ctx, cfg.Image); err != nil {
		return platform.Machine{}, err
	}
	if err := p.stop(ctx, cid); err != nil {
		return platform.Machine{}, err
	}
	if err := p.cli.ContainerRemove(ctx, cid, container.RemoveOptions{}); err != nil {
		return platform.Machine{}, mapErr("remove the old container of "+id, err)
	}
	ncid, err := p.create(ctx, app, id, instance+1, cfg)
	if err != nil {
		return platform.Machine{}, err
	}
	if err := p.cli.ContainerStart(ctx, ncid, container.StartOptions{}); err != nil {
		return platform.Machine{}, mapErr("start machine "+id, err)
	}
	return p.inspect(ctx, app, ncid)
}

func (p *Platform) stop(ctx context.Context, cid string) error {
	secs := int(p.opts.StopTimeout.Seconds())
	if err := p.cli.ContainerStop(ctx, cid, container.StopOptions{Timeout: &secs}); err != nil {
		return mapErr("stop container "+cid, err)
	}
	return nil
}

// Start implements platform.Platform; a paused (suspended) machine is
// unpaused.
func (p *Platform) Start(ctx context.Context, app, id string) error {
	cid, err := p.container(ctx, app, id)
	if err != nil {
		return err
	}
	ci, err := p.cli.ContainerInspect(ctx, cid)
	if err != nil {
		return mapErr("inspect machine "+id, err)
	}
	if ci.State != nil && ci.State.Paused {
		return mapErr("unpause machine "+id, p.cli.ContainerUnpause(ctx, cid))
	}
	return mapErr("start machine "+id, p.cli.ContainerStart(ctx, cid, container.StartOptions{}))
}

// Stop implements platform.Platform (docker stop: SIGTERM, SIGKILL after the
// stop timeout).
func (p *Platform) Stop(ctx context.Context, app, id string) error {
	cid, err := p.container(ctx, app, id)
	if err != nil {
		return err
	}
	return p.stop(ctx, cid)
}

// Suspend pauses the machine's container (the cgroup freezer).
func (p *Platform) Suspend(ctx context.Context, app, id string) error {
	cid, err := p.container(ctx, app, id)
	if err != nil {
		return err
	}
	return mapErr("pause machine "+id, p.cli.ContainerPause(ctx, cid))
}

// Destroy implements platform.Platform: every container of the machine is
// removed (forced); images are left alone.
func (p *Platform) Destroy(ctx context.Context, app, id string) error {
	cs, err := p.containers(ctx, app, id)
	if err != nil {
		return err
	}
	if len(cs) == 0 {
		return fmt.Errorf("machine %s of app %s: %w", id, app, platform.ErrNotFound)
	}
	for _, c := range cs {
		if err := p.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return mapErr("remove machine "+id, err)
		}
	}
	return nil
}

// Wait implements platform.Platform, polling inspect every 100ms.
func (p *Platform) Wait(ctx context.Context, app, id string, state platform.State, timeout time.Duration) error {
	deadline := p.opts.Clock.Now().Add(timeout)
	for {
		cid, err := p.container(ctx, app, id)
		if err != nil {
			return err
		}
		ci, err := p.cli.ContainerInspect(ctx, cid)
		if err != nil {
			return mapErr("inspect machine "+id, err)
		}
		if stateOf(ci.State) == state {
			return nil
		}
		if p.opts.Clock.Now().After(deadline) {
			return fmt.Errorf("machine %s is %s, not %s, after %s: %w", id, stateOf(ci.State), state, timeout, platform.ErrTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.opts.Clock.After(100 * time.Millisecond):
		}
	}
}

// newID returns a Fly-like machine id: 14 hex digits.
func newID() string {
	b := make([]byte, 7)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

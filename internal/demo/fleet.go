// Package demo runs mythex's embedded default: a local fleet — the embedded
// load balancer and one host agent process per host, each running the
// write-up's four services — a load under the prober, and rolling deploys,
// measured by the requests that reached nothing. `mythex demo` is its CLI; the
// end-to-end tests of the deploy use its Fleet too.
package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	dockerexample "github.com/mythex/mythex/examples/docker"
	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/freeport"
	"github.com/mythex/mythex/internal/lb"
	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/lbport/fleetlb"
	"github.com/mythex/mythex/internal/lbport/haproxy/deploylb"
	"github.com/mythex/mythex/internal/lbport/haproxy/local"
)

//go:embed compose.yaml
var composeYAML []byte

// FleetOptions configure a local fleet.
type FleetOptions struct {
	// Config is the fleet's timing (a profile, already scaled). Its hosts,
	// addresses and compose file are replaced by the fleet's own.
	Config fleet.Config
	// Hosts is the number of hosts. Default 3.
	Hosts int
	// Exe is the mythex binary: it runs the agents and, as `mythex
	// sample-app`, the services. Required.
	Exe string
	// AppExe, when set, is a binary of the sample app alone (examples/app)
	// that runs the services in Exe's place (RuntimeProcess only). It is the
	// same program as `mythex sample-app`; a binary of it alone starts on a
	// fifth of the CPU (it lacks the mythex binary's package inits), which
	// counts for tests that start hundreds of services. Default: Exe.
	AppExe string
	// Dir holds everything the fleet writes (config, state, logs). Required.
	Dir string
	// Logger receives the load balancer's state changes. Default: discarded.
	Logger *slog.Logger
	// Runtime runs the services: RuntimeProcess (default) or RuntimeDocker
	// (containers of the sample app image on the local Docker engine, from
	// examples/docker/compose.yaml; Exe must then be statically linked).
	Runtime string
	// LBPoll is how often a deploy polls the load balancer (LB alb).
	// Default: the deploy's, a tenth of the health check interval.
	LBPoll time.Duration
	// ELBv2Throttle, when more than 0, makes the LB's ELBv2 endpoint answer
	// only this many calls per second (LB alb).
	ELBv2Throttle float64
	// LB is the load balancer: LBEmbedded (default), LBHAProxy, or LBALB
	// (the embedded LB driven through its ELBv2 endpoint by the alb driver,
	// signed with a key pair made for the run).
	LB string
}

// Runtimes the demo's agents can use.
const (
	// RuntimeProcess runs the services as child processes of the agents.
	RuntimeProcess = "process"
	// RuntimeDocker runs them as containers on the local Docker engine.
	RuntimeDocker = "docker"
)

// Fleet is a running local fleet. Close it to stop every process it started.
type Fleet struct {
	// agentKillOnce and AgentKillErr are the agent-kill fault's.
	agentKillOnce sync.Once
	// AgentKillErr is why the agent-kill fault could not kill or restart the agent.
	AgentKillErr error
	// exe is the mythex binary the agents run (agent-kill restarts one).
	exe string
	// Loaded is the fleet's mythex.yml as written and read back.
	Loaded *fleet.Loaded
	// AgentToken and LBToken are the bearer tokens of the agents and the LB.
	AgentToken, LBToken string
	// LB is the embedded load balancer, running in this process.
	LB *lb.Server
	// ELBv2Key is the key pair of the LB's ELBv2 endpoint (LB alb).
	ELBv2Key lb.KeyPair
	// LBCalls is how many load balancer API calls the last Deploy made
	// (LB alb).
	LBCalls int64

	lbPoll   time.Duration
	throttle float64

	dir    string
	docker *dockerFleet // nil on the process runtime
	agents []*exec.Cmd
	exited []chan struct{}
	logger *slog.Logger

	// lbMu guards the running load balancer: lb-restart replaces it.
	lbMu     sync.Mutex
	lbCancel context.CancelFunc
	lbDone   chan error
	haproxy  *local.HAProxy // nil behind the embedded LB
	// dataLn is the LB's listening socket, kept open for the fleet's life:
	// each LB generation serves a duplicate of it, so a restart hands it
	// over and no connection is refused.
	dataLn      net.Listener
	restartOnce sync.Once
	// RestartErr is why the lb-restart fault's restart failed, if it did;
	// RestartTook is how long the admin API was down for it.
	RestartErr  error
	RestartTook time.Duration
	// DrainsReapplied counts the drains HAProxy lost (a reload) that the
	// deploys' driver found and set again.
	DrainsReapplied atomic.Int64
}

// StartFleet writes the fleet's config, starts the load balancer and one agent
// process per host, and returns once every agent answers. On error everything
// started is stopped again.
func StartFleet(ctx context.Context, o FleetOptions) (_ *Fleet, err error) {
	if o.Hosts <= 0 {
		o.Hosts = 3
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	f := &Fleet{dir: o.Dir, exe: o.Exe, AgentToken: token(), LBToken: token(), lbPoll: o.LBPoll, throttle: o.ELBv2Throttle}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	ports, err := freeport.Ports(2 + 5*o.Hosts)
	if err != nil {
		return nil, err
	}
	cfg := o.Config
	cfg.LoadBalancer.Kind = fleet.KindEmbedded
	cfg.LoadBalancer.Listen = addr(ports[0])
	cfg.LoadBalancer.AdminListen = addr(ports[1])
	switch o.LB {
	case "", LBEmbedded, LBHAProxy:
	case LBALB:
		// The embedded LB stands in for the ALB: the deploy reaches it only
		// through its ELBv2 endpoint, as it would reach AWS.
		cfg.LoadBalancer.Kind = fleet.KindALB
		cfg.LoadBalancer.TargetType = fleet.TargetTypeIP
		cfg.LoadBalancer.Endpoint = "http://" + cfg.LoadBalancer.AdminListen
		cfg.LoadBalancer.Region = lb.DefaultELBv2Region
		cfg.LoadBalancer.TargetGroupARN = lb.DefaultTargetGroupARN
		// A propagation grace that exercises the handshake's wait yet keeps
		// the overlap invariant: half the slack between the serve period and
		// the health check's detection time.
		hc := cfg.LoadBalancer.HealthCheck
		cfg.LoadBalancer.PropagationMargin = max(0, (cfg.Drain.ServePeriod-time.Duration(hc.UnhealthyThreshold)*hc.Interval-hc.Timeout)/2)
		f.ELBv2Key = lb.KeyPair{AccessKeyID: "AKIAMYTHEXDEMO" + strings.ToUpper(token()[:6]), SecretAccessKey: token()}
	default:
		return nil, fmt.Errorf("%w: load balancer %q; use %s, %s or %s", fleet.ErrInvalid, o.LB, LBEmbedded, LBHAProxy, LBALB)
	}
	cfg.Deploy.Compose = "compose.yaml"
	if o.LB == LBHAProxy {
		useHAProxy(&cfg, o.Dir)
	}
	hc := cfg.LoadBalancer.HealthCheck
	appBin := o.Exe
	if o.AppExe != "" {
		appBin = o.AppExe
	}
	cfg.Hosts = nil
	for i := range o.Hosts {
		p := ports[2+5*i:]
		cfg.Hosts = append(cfg.Hosts, fleet.Host{
			Name:   fmt.Sprintf("web-%d", i+1),
			Target: addr(p[0]),
			Agent:  addr(p[1]),
			Vars: map[string]string{
				"APP_BIN":             appBin,
				"API_PORT":            strconv.Itoa(p[2]),
				"ORCHESTRATOR_PORT":   strconv.Itoa(p[3]),
				"PUBLISH_WORKER_PORT": strconv.Itoa(p[4]),
				// The runtime's own health checks (watchdog, start) run at
				// the LB's pace (MYTHEX_HEALTH_INTERVAL, from the fleet);
				// a quick first look while booting.
				"HEALTH_START_PERIOD":   (10 * hc.Interval).String(),
				"HEALTH_START_INTERVAL": min(hc.Interval/10, 50*time.Millisecond).String(),
			},
		})
	}
	compose := composeYAML
	switch o.Runtime {
	case "", RuntimeProcess:
		if o.AppExe != "" {
			// The sample app alone takes no subcommand.
			compose = bytes.ReplaceAll(compose, []byte("\n    command: [sample-app]"), nil)
		}
	case RuntimeDocker:
		if f.docker, err = startDocker(ctx, o.Exe, o.Dir); err != nil {
			return nil, err
		}
		compose = dockerexample.Compose
		for i := range cfg.Hosts {
			v := cfg.Hosts[i].Vars
			v["IMAGE"] = f.docker.repo
			// Docker's check execs the mythex binary inside the container:
			// on a busy machine that alone can take longer than the LB's
			// scaled-down timeout. The LB's own checks keep their numbers.
			v["HEALTH_TIMEOUT"] = dockerHealthTimeout.String()
			v["HEALTH_START_PERIOD"] = dockerStartTimeout.String()
			v["HEALTH_INTERVAL"] = max(hc.Interval, dockerHealthInterval).String()
			v["HEALTH_START_INTERVAL"] = max(hc.Interval/10, dockerStartInterval).String()
		}
	default:
		return nil, fmt.Errorf("%w: runtime %q; use %s or %s", fleet.ErrInvalid, o.Runtime, RuntimeProcess, RuntimeDocker)
	}
	if err := os.WriteFile(filepath.Join(o.Dir, "compose.yaml"), compose, 0o644); err != nil {
		return nil, err
	}
	b, err := fleet.Encode(cfg)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(o.Dir, "mythex.yml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, err
	}
	if f.Loaded, err = fleet.Load(path); err != nil {
		return nil, fmt.Errorf("the demo wrote a config it cannot read: %w", err)
	}
	if f.Loaded.LoadBalancer.Kind == fleet.KindHAProxy {
		err = f.startHAProxy(ctx)
	} else {
		err = f.startLB(o.Logger)
	}
	if err != nil {
		return nil, err
	}
	for _, h := range f.Loaded.Hosts {
		if err := f.startAgent(o.Exe, h); err != nil {
			return nil, err
		}
	}
	for _, h := range f.Loaded.Hosts {
		if err := f.waitAgent(ctx, h); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (f *Fleet) startLB(log *slog.Logger) error {
	f.logger = log
	ln, err := net.Listen("tcp", f.Loaded.LoadBalancer.Listen)
	if err != nil {
		return fmt.Errorf("load balancer: %w", err)
	}
	f.dataLn = ln
	var targets []lb.TargetStatus
	for _, h := range f.Loaded.Hosts {
		targets = append(targets, lb.TargetStatus{ID: h.Name, Address: h.Target, State: lb.StateHealthy})
	}
	return f.serveLB(targets, false)
}

// serveLB starts a load balancer generation with targets registered (those
// the previous one had registered and not draining), serving a duplicate of
// the listening socket and a new admin listener. With wait it serves only
// once every target that was healthy is healthy again, as a reload that
// restores its server state does.
func (f *Fleet) serveLB(targets []lb.TargetStatus, wait bool) error {
	settings, err := lb.SettingsFromFleet(f.Loaded.LoadBalancer)
	if err != nil {
		return err
	}
	o := lb.Options{Settings: settings, Token: f.LBToken, Logger: f.logger, ShutdownTimeout: 2 * time.Second}
	if f.Loaded.LoadBalancer.Kind == fleet.KindALB {
		o.ELBv2 = &lb.ELBv2Options{Key: f.ELBv2Key, Region: f.Loaded.LoadBalancer.Region, TargetGroupARN: f.Loaded.LoadBalancer.TargetGroupARN,
			Throttle: f.throttle}
	}
	srv, err := lb.New(o)
	if err != nil {
		return err
	}
	var healthy []string
	for _, t := range targets {
		if t.State == lb.StateDraining || t.State == lb.StateUnused {
			continue
		}
		if _, err := srv.Group.Register(t.ID, t.Address); err != nil {
			return err
		}
		if t.State == lb.StateHealthy {
			healthy = append(healthy, t.ID)
		}
	}
	if wait {
		deadline := time.Now().Add(healthyWait(&f.Loaded.Config))
		for _, id := range healthy {
			for time.Now().Before(deadline) {
				if st, err := srv.Group.Target(id); err == nil && st.State == lb.StateHealthy {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	ln, err := dupListener(f.dataLn)
	if err != nil {
		return fmt.Errorf("load balancer: %w", err)
	}
	var adminLn net.Listener
	for range 50 {
		// The previous generation's admin port may take a moment to free.
		if adminLn, err = net.Listen("tcp", f.Loaded.LoadBalancer.AdminListen); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		ln.Close()
		return fmt.Errorf("load balancer admin: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.lbMu.Lock()
	f.LB, f.lbCancel, f.lbDone = srv, cancel, make(chan error, 1)
	done := f.lbDone
	f.lbMu.Unlock()
	go func() { done <- srv.Serve(ctx, ln, adminLn) }()
	return nil
}

// restartLBOnce restarts the load balancer once (the lb-restart fault): the
// running generation shuts down — its admin API now refuses connections,
// its in-flight requests finish — and a new one starts with the same
// targets, serving the same listening socket. HAProxy is reloaded instead
// (local.HAProxy.Reload: a new process from haproxy.cfg, every server's
// runtime state reset). Later calls do nothing.
func (f *Fleet) restartLBOnce(ctx context.Context) {
	f.restartOnce.Do(func() {
		begin := time.Now()
		defer func() { f.RestartTook = time.Since(begin) }()
		if f.haproxy != nil {
			// HAProxy's own restart: a soft reload.
			f.RestartErr = f.haproxy.Reload(ctx)
			return
		}
		f.lbMu.Lock()
		old, cancel, done := f.LB, f.lbCancel, f.lbDone
		f.lbMu.Unlock()
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			f.RestartErr = err
		}
		if err := f.serveLB(old.Group.Targets(), true); err != nil {
			f.RestartErr = errors.Join(f.RestartErr, err)
		}
	})
}

// RestartLB restarts the load balancer as the lb-restart fault does
// (HAProxy reloaded, the embedded LB's generation replaced; see
// restartLBOnce) and returns the restart's error. Only the first call of a
// fleet restarts; later calls return the first one's error.
func (f *Fleet) RestartLB(ctx context.Context) error {
	f.restartLBOnce(ctx)
	return f.RestartErr
}

// HostDir is the state directory of host's agent (its --state-dir: its
// definitions, history and leases), under the fleet's directory.
func (f *Fleet) HostDir(host string) string { return filepath.Join(f.dir, "hosts", host) }

// lbClient is a client of the running load balancer's admin API.
func (f *Fleet) lbClient() *lbapi.Client {
	return lbapi.NewClient(f.Loaded.LoadBalancer.AdminListen, f.LBToken, nil)
}

// dupListener returns a listener on a duplicate of ln's socket: closing
// one leaves the socket listening for the other.
func dupListener(ln net.Listener) (net.Listener, error) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return nil, fmt.Errorf("listener %T cannot be duplicated", ln)
	}
	fh, err := tl.File()
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return net.FileListener(fh)
}

func (f *Fleet) startAgent(exe string, h fleet.Host) error {
	logFile, err := os.Create(filepath.Join(f.dir, h.Name+"-agent.log"))
	if err != nil {
		return err
	}
	args := []string{"agent", "-f", f.Loaded.Path, "--host", h.Name,
		"--state-dir", f.HostDir(h.Name), "--stop-services-on-exit"}
	if f.docker != nil {
		// The agent starts a host's four containers one after another, each
		// taking the engine a second or more, and its start timeout counts
		// from the first: give it room (a container that exits still fails
		// the start at once).
		args = append(args, "--runtime", RuntimeDocker, "--docker-label", f.docker.label, "--start-timeout", dockerStartTimeout.String())
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "MYTHEX_AGENT_TOKEN="+f.AgentToken, "MYTHEX_LB_TOKEN="+f.LBToken)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group (Ctrl-C reaches the demo, which stops the agents
	// in order), and SIGTERM if the demo dies without cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start agent %s: %w", h.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	f.agents = append(f.agents, cmd)
	f.exited = append(f.exited, done)
	return nil
}

func (f *Fleet) waitAgent(ctx context.Context, h fleet.Host) error {
	c := agentapi.NewClient(h.Agent, f.AgentToken, nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Status(sctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("agent %s did not answer (see %s): %w", h.Name, filepath.Join(f.dir, h.Name+"-agent.log"), err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Deploy rolls version across the fleet with mythex's rolling deploy. vars
// are extra compose variables for this version on every host (e.g.
// CRASH_ON_START to make it crash at boot).
func (f *Fleet) Deploy(ctx context.Context, version string, vars map[string]string, obs deploy.Observer) (deploy.Result, error) {
	return f.deploy(ctx, version, vars, obs, false)
}

// FirstRollout deploys version to every host of a fleet that serves nothing
// yet, all hosts in one batch: with no host in rotation there is no traffic
// to protect, so a batch at a time would only wait (each batch waits for its
// health checks and min_healthy_time in turn). It is the rolling deploy
// otherwise — lease, publish, start, healthy, verify, release — with
// --allow-downtime's preflight. On a fleet that already serves, use Deploy.
func (f *Fleet) FirstRollout(ctx context.Context, version string) (deploy.Result, error) {
	return f.deploy(ctx, version, nil, nil, true)
}

func (f *Fleet) deploy(ctx context.Context, version string, vars map[string]string, obs deploy.Observer, first bool) (deploy.Result, error) {
	loaded := *f.Loaded
	if first {
		loaded.Deploy.BatchSize = len(loaded.Hosts)
	}
	loaded.Hosts = append([]fleet.Host(nil), f.Loaded.Hosts...)
	for i := range loaded.Hosts {
		v := maps.Clone(loaded.Hosts[i].Vars)
		maps.Copy(v, vars)
		loaded.Hosts[i].Vars = v
	}
	if f.docker != nil {
		if err := f.docker.tag(ctx, version); err != nil {
			return deploy.Result{}, err
		}
	}
	// The same way to the agents as mythex deploy (here: loopback).
	pool := agentconn.NewPool(agentconn.Options{})
	defer pool.Close()
	o, err := f.deployOptions(ctx, &loaded, version, pool)
	if err != nil {
		return deploy.Result{}, err
	}
	if loaded.LoadBalancer.Kind == fleet.KindALB {
		creds := credentials.NewStaticCredentialsProvider(f.ELBv2Key.AccessKeyID, f.ELBv2Key.SecretAccessKey, "")
		d, err := fleetlb.Open(ctx, loaded.LoadBalancer, fleetlb.Options{Credentials: creds})
		if err != nil {
			return deploy.Result{}, err
		}
		// The demo's timings are scaled down: poll at its pace, not 2 s.
		o.LB, o.Poll = d, f.lbPoll
		if c, ok := d.(interface{ Calls() int64 }); ok {
			defer func() { f.LBCalls = c.Calls() }()
		}
	}
	if hl, ok := o.LB.(deploylb.LB); ok {
		defer func() { f.DrainsReapplied.Add(hl.Driver.Reapplied()) }()
	}
	o.Holder = "mythex demo " + version
	o.Observer = obs
	o.AllowDowntime = first // nothing serves yet: the one batch takes nothing out of rotation
	d, err := deploy.New(o)
	if err != nil {
		return deploy.Result{}, err
	}
	return d.Run(ctx)
}

// AgentRSS returns each running agent's resident set size in bytes, read from
// /proc (Linux); hosts whose agent is gone or unreadable are left out.
func (f *Fleet) AgentRSS() map[string]int64 {
	out := map[string]int64{}
	for i, c := range f.agents {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.Process.Pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				var kb int64
				if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &kb); err == nil {
					out[f.Loaded.Hosts[i].Name] = kb * 1024
				}
			}
		}
	}
	return out
}

// URL is the load balancer's front URL.
func (f *Fleet) URL() string { return "http://" + f.Loaded.LoadBalancer.Listen + "/" }

// Agent returns a client for host i's agent.
func (f *Fleet) Agent(i int) *agentapi.Client {
	return agentapi.NewClient(f.Loaded.Hosts[i].Agent, f.AgentToken, nil)
}

// Close stops every agent (which stop their services within their grace
// periods), then the load balancer. It waits for all of them.
func (f *Fleet) Close() error {
	for _, c := range f.agents {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	var errs []error
	grace := f.stopWait()
	for i, done := range f.exited {
		select {
		case <-done:
		case <-time.After(grace):
			_ = syscall.Kill(-f.agents[i].Process.Pid, syscall.SIGKILL)
			<-done
			errs = append(errs, fmt.Errorf("agent %d did not stop within %v; killed", i+1, grace))
		}
	}
	f.haproxy.Stop()
	f.lbMu.Lock()
	cancel, done := f.lbCancel, f.lbDone
	f.lbMu.Unlock()
	if cancel != nil {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	if f.dataLn != nil {
		f.dataLn.Close()
	}
	if f.docker != nil {
		errs = append(errs, f.docker.close())
	}
	return errors.Join(errs...)
}

// stopWait bounds how long an agent may take to stop its services.
func (f *Fleet) stopWait() time.Duration {
	if f.Loaded == nil {
		return 10 * time.Second
	}
	return f.Loaded.Backend.StopGracePeriod + 10*time.Second
}

// LogTail returns the last bytes of host name's agent log, for error reports.
func (f *Fleet) LogTail(name string, n int64) string {
	fh, err := os.Open(filepath.Join(f.dir, name+"-agent.log"))
	if err != nil {
		return ""
	}
	defer fh.Close()
	if st, err := fh.Stat(); err == nil && st.Size() > n {
		_, _ = fh.Seek(-n, io.SeekEnd)
	}
	b, _ := io.ReadAll(fh)
	return string(b)
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

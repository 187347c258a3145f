package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/mythex/mythex/internal/runtime/docker"
	"github.com/mythex/mythex/internal/runtime/docker/dockertest"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
	"github.com/mythex/mythex/internal/wire"
)

// e2eCompose is the definition the Docker e2e tests deploy: the gateway of
// examples/docker/compose.yaml, alone, so a deploy takes seconds.
const e2eCompose = `name: ${PROJECT}
services:
  gateway:
    image: ${IMAGE}:${MYTHEX_VERSION}
    environment:
      MYTHEX_APP_SERVICE: gateway
      MYTHEX_APP_VERSION: ${MYTHEX_VERSION}
      MYTHEX_APP_HOST_NAME: ${MYTHEX_HOST}
      MYTHEX_APP_LISTEN: 0.0.0.0:8081
      MYTHEX_APP_HEALTH_PATH: ${MYTHEX_HEALTH_PATH}
      MYTHEX_APP_DRAIN_SERVE_PERIOD: ${MYTHEX_DRAIN_SERVE_PERIOD}
      MYTHEX_APP_SHUTDOWN_TIMEOUT: ${MYTHEX_DRAIN_SHUTDOWN_TIMEOUT}
      MYTHEX_APP_IDLE_TIMEOUT: ${MYTHEX_KEEPALIVE_IDLE_TIMEOUT}
      MYTHEX_APP_CRASH_ON_START: ${CRASH_ON_START:-0s}
    ports: ["127.0.0.1:${MYTHEX_TARGET_PORT}:8081"]
    stop_grace_period: ${MYTHEX_STOP_GRACE_PERIOD}
    healthcheck:
      test: ["CMD", "/mythex", "sample-app", "check", "http://127.0.0.1:8081${MYTHEX_HEALTH_PATH}"]
      # each check execs mythex in the container (~0.4 s of CPU with runc's
      # share): a slow pace, and quick looks only while it boots
      interval: 5s
      timeout: 2s
      retries: 3
      start_period: 10s
      start_interval: 1s
`

// dockerFleet is a two-host fleet on one engine, its processes and tokens.
type dockerFleet struct {
	t       *testing.T
	bin     string
	dir     string
	run     string
	cli     *client.Client
	hosts   []string
	targets []string
	agents  []string
	lbAddr  string
	admin   string
	env     []string
}

// newDockerFleet builds the sample app image (tags v1–v3), writes the fleet
// and starts the load balancer and one `mythex agent --runtime docker` per
// host. Everything it creates goes in t.Cleanup.
func newDockerFleet(t *testing.T) *dockerFleet {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: real containers")
	}
	ctx := context.Background()
	cli := dockertest.Engine(t)
	bin := mythexBin(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	f := &dockerFleet{t: t, bin: bin, dir: t.TempDir(), run: hex.EncodeToString(b), cli: cli}
	repo := "mythex-e2e-" + f.run + "/app"
	runLabel := "mythex.test-run=" + f.run
	t.Cleanup(func() { f.removeAll(runLabel) })
	if _, err := docker.BuildImage(ctx, cli, docker.ImageOptions{
		Binary: bin, Tags: []string{repo + ":v1", repo + ":v2", repo + ":v3"}, Labels: map[string]string{"mythex.test-run": f.run},
	}); err != nil {
		t.Fatalf("build image: %v", err)
	}
	ports := freePorts(t, 6)
	for i := 1; i <= 2; i++ {
		f.hosts = append(f.hosts, fmt.Sprintf("e2e-%s-%d", f.run, i))
		f.targets = append(f.targets, addr(ports[2*i-2]))
		f.agents = append(f.agents, addr(ports[2*i-1]))
	}
	f.lbAddr, f.admin = addr(ports[4]), addr(ports[5])
	f.env = append(os.Environ(), "MYTHEX_AGENT_TOKEN=agent-token-"+f.run, "MYTHEX_LB_TOKEN=lb-token-"+f.run)
	if err := os.WriteFile(filepath.Join(f.dir, "compose.yaml"), []byte(e2eCompose), 0o600); err != nil {
		t.Fatal(err)
	}
	f.writeFleet("")
	f.start("lb", "lb", "-f", f.fleetFile())
	testbin.WaitListening(t, f.admin, 30*time.Second)
	for i, h := range f.hosts {
		f.start("agent-"+h, "agent", "-f", f.fleetFile(), "--host", h, "--state-dir", filepath.Join(f.dir, "state", h), "--runtime", "docker", "--stop-services-on-exit")
		testbin.WaitListening(t, f.agents[i], 30*time.Second)
	}
	return f
}

func (f *dockerFleet) fleetFile() string { return filepath.Join(f.dir, "mythex.yml") }

// writeFleet writes mythex.yml; extraVars go into every host's vars.
func (f *dockerFleet) writeFleet(extraVars string) {
	var hosts strings.Builder
	for i, h := range f.hosts {
		fmt.Fprintf(&hosts, "  - name: %s\n    target: %s\n    agent: %s\n    vars: {IMAGE: mythex-e2e-%s/app, PROJECT: mythex-e2e-%s%s}\n",
			h, f.targets[i], f.agents[i], f.run, f.run, extraVars)
	}
	yml := "hosts:\n" + hosts.String() + fmt.Sprintf(`load_balancer:
  kind: embedded
  listen: %s
  admin_listen: %s
  health_check: {path: /healthz, interval: 250ms, timeout: 200ms, healthy_threshold: 2, unhealthy_threshold: 2}
  deregistration_delay: 2s
  idle_timeout: 5s
drain: {serve_period: 1s, shutdown_timeout: 1s, max: 30s}
backend: {keepalive_idle_timeout: 10s, stop_grace_period: 5s}
watchdog: {interval: 10s, failures_before_heal: 4}
deploy:
  batch_size: 1
  drain_mode: both
  min_healthy_time: 1s
  compose: compose.yaml
  verify: [gateway]
`, f.lbAddr, f.admin)
	if err := os.WriteFile(f.fleetFile(), []byte(yml), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// start runs the mythex binary with args until the test ends (startProcess:
// its log in the fleet's directory, its tail shown if the test fails).
func (f *dockerFleet) start(name string, args ...string) {
	f.t.Helper()
	startProcess(f.t, f.dir, name, f.env, f.bin, args...)
}

// deploy runs `mythex deploy` for version and returns its exit code and
// output.
func (f *dockerFleet) deploy(version string) (int, string) {
	f.t.Helper()
	var out testkit.SyncBuffer
	code, err := testbin.Run(f.bin, f.env, &out, &out, "deploy", "-f", f.fleetFile(), "--version", version)
	if err != nil {
		f.t.Fatalf("deploy %s: %v", version, err)
	}
	return code, out.String()
}

// gateway returns the containers of host's gateway, by ID, with their Docker
// state.
func (f *dockerFleet) gateway(host string) map[string]string {
	f.t.Helper()
	cs, err := f.cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", docker.LabelHost+"="+host), filters.Arg("label", docker.LabelService+"=gateway"))})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range cs {
		out[c.ID] = string(c.State)
	}
	return out
}

// running returns the ID of host's running gateway container.
func (f *dockerFleet) running(host string) string {
	f.t.Helper()
	for id, st := range f.gateway(host) {
		if st == "running" {
			return id
		}
	}
	f.t.Fatalf("%s: no running gateway container: %v", host, f.gateway(host))
	return ""
}

// removeAll removes the fleet's containers, network and images.
func (f *dockerFleet) removeAll(runLabel string) {
	ctx := context.Background()
	for _, h := range f.hosts {
		cs, _ := f.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", docker.LabelHost+"="+h))})
		for _, c := range cs {
			_ = f.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
		}
	}
	_ = f.cli.NetworkRemove(ctx, "mythex-e2e-"+f.run+"_default")
	imgs, _ := f.cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", runLabel))})
	for _, i := range imgs {
		_, _ = f.cli.ImageRemove(ctx, i.ID, image.RemoveOptions{Force: true, PruneChildren: true})
	}
}

// httpLoad sends GET / through the load balancer at a constant rate (open loop:
// one request per tick, whatever the others do) and classifies each answer
// as the write-up does: what users feel is a request that reached nothing —
// no connection, or a response the load balancer made itself (X-Mythex-Lb).
type httpLoad struct {
	mu       sync.Mutex
	total    int
	nothing  []string // what each request that reached nothing got
	appError int
	versions map[string]int
	last     string // version of the latest answer
	stop     chan struct{}
	wg       sync.WaitGroup
}

func startHTTPLoad(url string, every time.Duration) *httpLoad {
	l := &httpLoad{versions: map[string]int{}, stop: make(chan struct{})}
	c := &http.Client{Timeout: 10 * time.Second}
	l.wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
			l.wg.Go(func() { l.one(c, url) })
		}
	})
	return l
}

func (l *httpLoad) one(c *http.Client, url string) {
	resp, err := c.Get(url)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total++
	if err != nil {
		l.nothing = append(l.nothing, err.Error())
		return
	}
	defer resp.Body.Close()
	if reason := resp.Header.Get(wire.HeaderLB); reason != "" {
		l.nothing = append(l.nothing, fmt.Sprintf("%d %s", resp.StatusCode, reason))
		return
	}
	if resp.StatusCode != http.StatusOK {
		l.appError++
		return
	}
	v := resp.Header.Get(wire.HeaderVersion)
	l.versions[v]++
	l.last = v
}

// end stops the load and waits for every request in flight.
func (l *httpLoad) end() {
	close(l.stop)
	l.wg.Wait()
}

// TestDockerDeploy runs the real mythex binary as the load balancer, two
// host agents on the Docker runtime and the deploy, against the machine's
// Docker engine, at scaled-down timings, as a user would from a shell (it
// skips when no engine is reachable). It deploys v1, then v2 under constant
// load through the load balancer (zero requests may reach nothing; the v1
// containers are kept, stopped), then v3, which crashes on boot: the first
// host is rolled back — v2's own container started again, not recreated —
// the rollout stops, and still nothing is dropped.
func TestDockerDeploy(t *testing.T) {
	t.Parallel()              // its own processes, ports, containers and images (by run ID)
	testbin.FleetSlotFirst(t) // among the longest fleets
	f := newDockerFleet(t)
	if code, out := f.deploy("v1"); code != 0 {
		t.Fatalf("deploy v1: exit %d\n%s", code, out)
	}
	v1 := map[string]string{}
	for _, h := range f.hosts {
		v1[h] = f.running(h)
	}
	v2 := map[string]string{}
	ok := t.Run("rolling deploy under load drops nothing", func(t *testing.T) {
		l := startHTTPLoad("http://"+f.lbAddr+"/", 20*time.Millisecond)
		code, out := f.deploy("v2")
		time.Sleep(500 * time.Millisecond) // load after the deploy, too
		l.end()
		if code != 0 {
			t.Fatalf("deploy v2: exit %d\n%s", code, out)
		}
		t.Logf("deploy v2 under load: %d requests, %d reached nothing, %d app errors, versions %v\n%s", l.total, len(l.nothing), l.appError, l.versions, out)
		if len(l.nothing) != 0 {
			t.Errorf("%d of %d requests reached nothing during the deploy: %v", len(l.nothing), l.total, l.nothing)
		}
		if l.total < 50 || l.versions["v1"] == 0 || l.versions["v2"] == 0 || l.last != "v2" {
			t.Errorf("load saw %d requests, versions %v, last %q: want both versions, v2 at the end", l.total, l.versions, l.last)
		}
		for _, h := range f.hosts {
			v2[h] = f.running(h)
			if v2[h] == v1[h] {
				t.Errorf("%s runs the v1 container after deploying v2", h)
			}
			// The previous version's container is stopped, not removed.
			if st := f.gateway(h)[v1[h]]; st != "exited" {
				t.Errorf("%s: v1 container %s is %q, want kept, stopped (exited)", h, v1[h][:12], st)
			}
		}
	})
	if !ok {
		return
	}
	t.Run("a release crashing on boot rolls back to the same container", func(t *testing.T) {
		// v3 crashes 300ms after every boot: the first host fails its
		// start, is rolled back, and the rollout stops there.
		f.writeFleet(`, CRASH_ON_START: 300ms`)
		l := startHTTPLoad("http://"+f.lbAddr+"/", 20*time.Millisecond)
		code, out := f.deploy("v3")
		time.Sleep(500 * time.Millisecond)
		l.end()
		t.Logf("failed deploy v3 under load: %d requests, %d reached nothing, versions %v\n%s", l.total, len(l.nothing), l.versions, out)
		if code != 1 {
			t.Fatalf("deploy v3: exit %d, want 1 (a host failed and was rolled back)\n%s", code, out)
		}
		if !strings.Contains(out, "rolled back") {
			t.Errorf("deploy output does not report the rollback:\n%s", out)
		}
		if len(l.nothing) != 0 {
			t.Errorf("%d of %d requests reached nothing during the failed deploy: %v", len(l.nothing), l.total, l.nothing)
		}
		if l.versions["v3"] != 0 || l.last != "v2" {
			t.Errorf("versions served %v, last %q: v3 must never serve, v2 must at the end", l.versions, l.last)
		}
		for _, h := range f.hosts {
			if got := f.running(h); got != v2[h] {
				t.Errorf("%s runs container %s, want v2's own container %s started again (rollback restores, never recreates)", h, got[:12], v2[h][:12])
			}
		}
		// The first host keeps the crashed v3 container, exited, beside
		// v1's and v2's.
		if cs := f.gateway(f.hosts[0]); len(cs) != 3 {
			t.Errorf("%s gateway containers %v, want v1 and v3 kept stopped beside v2", f.hosts[0], cs)
		}
	})
}

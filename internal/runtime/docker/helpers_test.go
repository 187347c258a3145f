package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/freeport"
	"github.com/mythex/mythex/internal/runtime"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
)

// Every container, network and image these tests create carries
// labelTestRun=runID; each test's runtime adds labelTestID, and the test
// removes what carries it in t.Cleanup. TestMain removes whatever is left of
// the run, the test image included.
const (
	labelTestRun = "mythex.test-run"
	labelTestID  = "mythex.test-id"
)

var (
	runID  = randomHex(6)
	testN  atomic.Int64
	engOne sync.Once
	engCli *client.Client
	engErr error
	imgOne sync.Once
	imgRef string
	imgErr error
)

// engineSlots bounds how many tests have containers on the engine at once:
// each start and health check costs the engine CPU (see service), and a
// starved engine makes the tests' checks late. newEnv takes a slot and
// frees it when the test's containers are gone.
var engineSlots = make(chan struct{}, 4)

// deadline bounds every wait for a condition: generous, since the machine is
// shared; the tests poll, never sleep to synchronise.
const deadline = 60 * time.Second

func TestMain(m *testing.M) {
	// Every parallel test of the package runs at once: those with
	// containers wait on the engine (starts, health checks, drains, grace
	// periods), not on this process's CPU, and engineSlots, not -parallel,
	// bounds how many of them have containers at a time. So a test without
	// containers (the static build, the image tests) never waits for a slot
	// behind one that does.
	testbin.SetParallel(32)
	code := m.Run()
	if engCli != nil {
		removeByLabel(context.Background(), engCli, labelTestRun+"="+runID, true)
		engCli.Close()
	}
	testbin.Cleanup()
	testkit.Exit(code)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// engine returns the test process's engine client, or skips the test when
// no engine is reachable.
func engine(t *testing.T) *client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("docker: -short skips the tests that need an engine")
	}
	engOne.Do(func() { engCli, engErr = Connect(context.Background(), "") })
	if engErr != nil {
		t.Skipf("docker: %v", engErr)
	}
	return engCli
}

// testImage builds the sample app image once per test process from the
// static mythex binary, and returns its reference.
func testImage(t *testing.T) string {
	t.Helper()
	cli := engine(t)
	imgOne.Do(func() {
		bin, err := testbin.Build(testbin.Mythex)
		if err != nil {
			imgErr = err
			return
		}
		ref := "mythex-test/app:" + runID
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		_, imgErr = BuildImage(ctx, cli, ImageOptions{Binary: bin, Tags: []string{ref}, Labels: map[string]string{labelTestRun: runID}})
		imgRef = ref
	})
	if imgErr != nil {
		t.Fatalf("build test image: %v", imgErr)
	}
	return imgRef
}

// testEnv is one test's runtime scope: its host name, labels and network.
type testEnv struct {
	host    string
	id      string
	network string
	image   string
	cli     *client.Client
}

// newEnv returns a fresh scope for t and removes, in t.Cleanup, every
// container and network carrying its label. It first waits for one of the
// engineSlots, and frees it once those are removed.
func newEnv(t *testing.T) *testEnv {
	t.Helper()
	cli := engine(t)
	img := testImage(t)
	engineSlots <- struct{}{}
	t.Cleanup(func() { <-engineSlots })
	n := testN.Add(1)
	e := &testEnv{
		host:    fmt.Sprintf("t%d-%s", n, runID),
		id:      fmt.Sprintf("%s-%d", runID, n),
		network: fmt.Sprintf("mythex-test-%s-%d", runID, n),
		image:   img,
		cli:     cli,
	}
	t.Cleanup(func() { removeByLabel(context.Background(), cli, labelTestID+"="+e.id, false) })
	return e
}

// labels are the runtime's extra labels for this scope.
func (e *testEnv) labels() map[string]string {
	return map[string]string{labelTestRun: runID, labelTestID: e.id}
}

// newDocker opens a Docker runtime on the scope (a fresh state directory
// unless opts gives one) and closes it in t.Cleanup.
func (e *testEnv) newDocker(t *testing.T, opts Options) *Docker {
	t.Helper()
	opts.Client = e.cli
	opts.Host = e.host
	opts.Labels = e.labels()
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	d, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// service is the sample app image as service name at version, listening on
// 0.0.0.0:8081 in its container, published on a free 127.0.0.1 port, with
// Docker's healthcheck every 2s (100ms while it starts) and env added to
// the app's settings.
func (e *testEnv) service(t *testing.T, name, version string, env map[string]string) (definition.Service, int) {
	t.Helper()
	port := freePort(t)
	en := map[string]string{
		definition.EnvVersion: version, definition.EnvService: name, definition.EnvHost: e.host,
		"MYTHEX_APP_SERVICE": name, "MYTHEX_APP_VERSION": version, "MYTHEX_APP_HOST_NAME": e.host,
		"MYTHEX_APP_LISTEN":             "0.0.0.0:" + strconv.Itoa(SampleAppPort),
		"MYTHEX_APP_DRAIN_SERVE_PERIOD": "300ms",
		"MYTHEX_APP_SHUTDOWN_TIMEOUT":   "1s",
	}
	maps.Copy(en, env)
	svc := definition.Service{
		Name:            name,
		Version:         version,
		Image:           e.image,
		Environment:     en,
		Labels:          map[string]string{"mythex.role": "backend"},
		StopGracePeriod: 5 * time.Second,
		Restart:         definition.RestartPolicy{Policy: definition.RestartNo},
		Healthcheck: &definition.Healthcheck{
			Test: []string{"/mythex", "sample-app", "check", fmt.Sprintf("http://127.0.0.1:%d/healthz", SampleAppPort)},
			// Each check execs mythex in the container, about 0.4 s of
			// CPU with runc's share: at 300 ms four containers kept two
			// cores busy. The tests wait only for a first pass, which
			// start_interval paces; Docker's own checks only keep it.
			Interval: 5 * time.Second, Timeout: 3 * time.Second, Retries: 3,
			StartPeriod: 10 * time.Second, StartInterval: 100 * time.Millisecond,
		},
		Ports:    []definition.Port{{HostIP: "127.0.0.1", Published: port, Target: SampleAppPort, Protocol: "tcp"}},
		Networks: []string{e.network},
	}
	if err := svc.Validate(); err != nil {
		t.Fatalf("test service: %v", err)
	}
	return svc, port
}

// freePort returns a loopback port for a container to be published on,
// claimed against every other test process (freeport.Ports): Docker binds
// it only when the container starts.
func freePort(t *testing.T) int {
	t.Helper()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// waitStatus polls d until cond holds for the newest instance of service
// name (or the instance id, when id is not empty) and returns it.
func waitStatus(t *testing.T, d *Docker, name, id string, what string, cond func(runtime.ServiceStatus) bool) runtime.ServiceStatus {
	t.Helper()
	return waitStatusWithin(t, d, name, id, what, deadline, cond)
}

// waitStatusWithin is waitStatus failing after within instead of deadline.
func waitStatusWithin(t *testing.T, d *Docker, name, id string, what string, within time.Duration, cond func(runtime.ServiceStatus) bool) runtime.ServiceStatus {
	t.Helper()
	end := time.Now().Add(within)
	var last []runtime.ServiceStatus
	for time.Now().Before(end) {
		sts, err := d.Status(context.Background())
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		last = sts
		var pick *runtime.ServiceStatus
		for i := range sts {
			s := &sts[i]
			if s.Name == name && (id == "" || s.ID == id) {
				pick = s // sorted oldest first: the last match is the newest
			}
		}
		if pick != nil && cond(*pick) {
			return *pick
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s %s: not %s within %v; status %+v", name, id, what, within, last)
	return runtime.ServiceStatus{}
}

// healthy waits until the newest instance of name runs and is healthy.
func healthy(t *testing.T, d *Docker, name string) runtime.ServiceStatus {
	t.Helper()
	return waitStatus(t, d, name, "", "running and healthy", func(s runtime.ServiceStatus) bool {
		return s.State == runtime.StateRunning && s.Health.Status == runtime.HealthHealthy
	})
}

// get fetches / from the service on port and returns the body.
func get(t *testing.T, port int) string {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		t.Fatalf("GET :%d: %v", port, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// removeByLabel force-removes every container and network carrying label
// (and, with images, every image).
func removeByLabel(ctx context.Context, cli *client.Client, label string, images bool) {
	f := filters.NewArgs(filters.Arg("label", label))
	cs, _ := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	for _, c := range cs {
		_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}
	ns, _ := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	for _, n := range ns {
		_ = cli.NetworkRemove(ctx, n.ID)
	}
	if images {
		is, _ := cli.ImageList(ctx, image.ListOptions{All: true, Filters: f})
		for _, i := range is {
			_, _ = cli.ImageRemove(ctx, i.ID, image.RemoveOptions{Force: true, PruneChildren: true})
		}
	}
}

// imageRemoveUntag removes a reference without forcing.
var imageRemoveUntag = image.RemoveOptions{}

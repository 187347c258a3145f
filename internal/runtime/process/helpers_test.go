package process

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/freeport"
	"github.com/mythex/mythex/internal/runtime"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case childArg:
			testkit.Exit(childMain(os.Args[2:]))
		case checkArg:
			testkit.Exit(checkMain())
		}
	}
	// The tests run real processes and wait on their timers (start
	// delays, grace periods, health checks), not on CPU: eight at once.
	testbin.SetParallel(8)
	code := m.Run()
	testbin.Cleanup()
	testkit.Exit(code)
}

// deadline bounds every wait for a condition: generous, since the machine is
// shared; the tests poll, never sleep to synchronise.
const deadline = 20 * time.Second

// newProcess opens a process runtime on a fresh state directory; cleanup
// kills whatever still runs and closes it.
func newProcess(t *testing.T, opts Options) *Process {
	t.Helper()
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	p, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { stopAll(t, p) })
	return p
}

// stopAll kills every running instance of p, then closes it.
func stopAll(t *testing.T, p *Process) {
	t.Helper()
	if sts, err := p.Status(context.Background()); err == nil {
		for _, s := range sts {
			if s.Running() {
				if _, err := p.Stop(context.Background(), s.Name, 0); err != nil {
					t.Errorf("cleanup stop %s: %v", s.Name, err)
				}
			}
		}
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// childService is a service running this test binary as childMain, with env
// added to the reserved variables.
func childService(t *testing.T, name, version string, env map[string]string) definition.Service {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// GORACE: a -race child otherwise sleeps 1s at exit.
	e := map[string]string{definition.EnvVersion: version, definition.EnvService: name, "GORACE": "atexit_sleep_ms=0"}
	maps.Copy(e, env)
	return definition.Service{
		Name:            name,
		Version:         version,
		Command:         []string{childArg},
		Environment:     e,
		StopGracePeriod: 10 * time.Second,
		Restart:         definition.RestartPolicy{Policy: definition.RestartNo},
		Process:         &definition.ProcessSpec{Executable: exe, WorkingDir: t.TempDir()},
	}
}

// freePort returns a loopback port for a child process to bind, claimed
// against every other test process (freeport.Ports): a port the kernel picks
// (bind to port 0) can be taken by another process before the child binds it.
func freePort(t *testing.T) int {
	t.Helper()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// withHTTPHealth makes svc listen on a free port with an HTTP health check.
func withHTTPHealth(t *testing.T, svc definition.Service) definition.Service {
	t.Helper()
	port := freePort(t)
	svc.Environment["CHILD_LISTEN"] = "127.0.0.1:" + strconv.Itoa(port)
	svc.Process.Port = port
	svc.Process.HealthPath = "/healthz"
	svc.Healthcheck = &definition.Healthcheck{
		Interval: 100 * time.Millisecond, Timeout: 2 * time.Second, Retries: 2,
		StartPeriod: 5 * time.Second, StartInterval: 50 * time.Millisecond,
	}
	return svc
}

// waitStatus polls p until cond holds for the status of instance id (or of
// service name, when id is a service name) and returns that status.
func waitStatus(t *testing.T, p *Process, id string, what string, cond func(runtime.ServiceStatus) bool) runtime.ServiceStatus {
	t.Helper()
	end := time.Now().Add(deadline)
	var last runtime.ServiceStatus
	for time.Now().Before(end) {
		st, err := p.Status(context.Background())
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		for _, s := range st {
			if s.ID == id || s.Name == id {
				last = s
				if cond(s) {
					return s
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never became %s; last status %+v", id, what, last)
	return last
}

// waitFile polls until path exists and returns its content.
func waitFile(t *testing.T, path string) []byte {
	t.Helper()
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		if b, err := os.ReadFile(path); err == nil {
			return b
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
	return nil
}

func readReport(t *testing.T, path string) childReport {
	t.Helper()
	var r childReport
	if err := json.Unmarshal(waitFile(t, path), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// mustStart starts svc, fails the test on error, and waits until the child
// is ready (has installed its signal handlers), as a real service would be
// before anyone stops it.
func mustStart(t *testing.T, p *Process, svc definition.Service) {
	t.Helper()
	before := readyCount(p, svc.Name)
	if err := p.Start(context.Background(), svc); err != nil {
		t.Fatalf("Start %s %s: %v", svc.Name, svc.Version, err)
	}
	end := time.Now().Add(deadline)
	for readyCount(p, svc.Name) == before {
		if time.Now().After(end) {
			t.Fatalf("%s %s never said it was ready", svc.Name, svc.Version)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readyCount counts the "child ready" lines in service name's log.
func readyCount(p *Process, name string) int {
	b, _ := os.ReadFile(p.LogPath(name))
	return bytes.Count(b, []byte("child ready"))
}

func mustStop(t *testing.T, p *Process, name string, grace time.Duration) runtime.StopResult {
	t.Helper()
	res, err := p.Stop(context.Background(), name, grace)
	if err != nil {
		t.Fatalf("Stop %s: %v", name, err)
	}
	return res
}

// processGone reports whether pid no longer runs (or is a zombie).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			return i+2 < len(b) && b[i+2] == 'Z'
		}
	}
	return false
}

func tempPath(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(t.TempDir(), name)
}

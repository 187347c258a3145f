package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mythex/mythex/examples/seed"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/freeport"
	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/probe"
	"github.com/mythex/mythex/internal/testbin"
)

// TestSIGTERMUnderLoad is the write-up's result reproduced: two instances of
// the sample app behind `mythex lb` under a constant load, one of them gets
// SIGTERM. With the fixed numbers (after.yml, ten times faster) no request
// reaches nothing; with the broken ones (before.yml) the server stops
// listening while the LB still routes to it, and the prober counts the
// requests that reached nothing.
func TestSIGTERMUnderLoad(t *testing.T) {
	t.Parallel() // its cases own their processes, ports and dirs
	if testing.Short() {
		t.Skip("end-to-end: real processes")
	}
	bin, err := testbin.Build(testbin.Mythex)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		src       []byte
		scale     float64
		wantDrops bool
	}{
		{"after: nothing dropped", seed.After, 0.1, false},
		{"before: requests reach nothing", seed.Before, 0.05, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case owns its processes, ports and dirs
			testbin.FleetSlot(t)
			l, err := fleet.Parse("seed.yml", tc.src)
			if err != nil {
				t.Fatal(err)
			}
			cfg := l.Config.Scaled(tc.scale)
			if !tc.wantDrops {
				// 0.2s scaled is too short a check timeout for a machine
				// running the race-enabled suite on 2 cores; 0.4s keeps the
				// overlap (drain 1.5s > 2 × 0.5s + 0.4s).
				cfg.LoadBalancer.HealthCheck.Timeout = 400 * time.Millisecond
			}
			rep := sigtermOne(t, bin, cfg)
			t.Logf("requests %d, reached nothing %d, ok %d, drain signals %d", rep.Requests, rep.ReachedNothing, rep.OK, rep.DrainSignals)
			if rep.Requests < 200 {
				t.Fatalf("only %d requests sent", rep.Requests)
			}
			if tc.wantDrops && rep.ReachedNothing == 0 {
				t.Errorf("the before numbers dropped nothing; the reproduction is broken")
			}
			if !tc.wantDrops && rep.ReachedNothing != 0 {
				t.Errorf("%d requests reached nothing with the after numbers: %+v", rep.ReachedNothing, rep.Reasons)
			}
			if rep.AppErrors != 0 {
				t.Errorf("%d app errors", rep.AppErrors)
			}
		})
	}
}

// sigtermOne runs the scenario with cfg's timings and returns the prober's
// report.
func sigtermOne(t *testing.T, bin string, cfg fleet.Config) probe.Report {
	t.Helper()
	dir := t.TempDir()
	ports := freePorts(t, 4)
	cfg.LoadBalancer.Listen, cfg.LoadBalancer.AdminListen = addr(ports[0]), addr(ports[1])
	cfg.Hosts = []fleet.Host{{Name: "app-1", Target: addr(ports[2])}, {Name: "app-2", Target: addr(ports[3])}}
	b, err := fleet.Encode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "mythex.yml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	const token = "e2e-token-0123456789abcdef"

	var apps []*exec.Cmd
	for i, h := range cfg.Hosts {
		apps = append(apps, start(t, bin, []string{"sample-app",
			"--listen", h.Target, "--service", "gateway", "--host-name", h.Name, "--version", "v1",
			"--drain-serve-period", cfg.Drain.ServePeriod.String(),
			"--shutdown-timeout", cfg.Drain.ShutdownTimeout.String(),
			"--idle-timeout", cfg.Backend.KeepAliveIdleTimeout.String(),
		}, nil, fmt.Sprintf("app-%d", i+1), "app: listening"))
	}
	start(t, bin, []string{"lb", "-f", path}, []string{"MYTHEX_LB_TOKEN=" + token}, "lb", "")
	admin := lbapi.NewClient("http://"+cfg.LoadBalancer.AdminListen, token, nil)
	waitFor(t, 30*time.Second, "both targets healthy", func() bool {
		ts, err := admin.Targets(context.Background())
		if err != nil || len(ts) != 2 {
			return false
		}
		for _, tg := range ts {
			if tg.State.String() != "healthy" {
				return false
			}
		}
		return true
	})

	// A 10 s request timeout: a request a loaded machine starves for
	// seconds is not one the fleet dropped (those are refused, reset or
	// LB-marked at once).
	p, err := probe.New(probe.Config{URL: "http://" + cfg.LoadBalancer.Listen + "/", Rate: 200, Timeout: testProbeTimeout}, probe.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // load before the SIGTERM, part of the measurement
	victim := apps[0]
	if err := victim.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = victim.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(cfg.Backend.StopGracePeriod + 10*time.Second):
		t.Fatal("the SIGTERMed instance did not exit")
	}
	// Keep the load on until the LB has certainly noticed (detection time
	// and a check interval more).
	hc := cfg.LoadBalancer.HealthCheck
	time.Sleep(hc.Interval*time.Duration(hc.UnhealthyThreshold+1) + hc.Timeout)
	return p.Stop()
}

// start runs mythex with args; when ready is set it waits for that line on
// stderr. The process is killed at the end of the test.
func start(t *testing.T, bin string, args, env []string, name, ready string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	logf, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = logf
	pr, pw, _ := os.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		logf.Close()
	})
	if ready != "" {
		deadline := time.After(20 * time.Second)
		for found := false; !found; {
			select {
			case l := <-lines:
				found = strings.Contains(l, ready)
			case <-deadline:
				t.Fatalf("%s never said %q", name, ready)
			}
		}
	}
	return cmd
}

func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePorts returns n free loopback ports, claimed against the fleets of
// this and every other test process (freeport.Ports).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := freeport.Ports(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

func addr(p int) string { return fmt.Sprintf("127.0.0.1:%d", p) }

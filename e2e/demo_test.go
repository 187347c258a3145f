package e2e

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/demo"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/probe"
	"github.com/mythex/mythex/internal/testbin"
)

// testScale runs the write-up's fixed numbers ten times faster: checks every
// 0.5s, a 1.5s drain.
const testScale = 0.1

// testCheckTimeout is the LB's health check timeout in tests.
const testCheckTimeout = demo.SuiteCheckTimeout

// testProbeTimeout is the prober's per-request timeout in tests. The tests
// run their fleets at once (each owns its ports and directories), on a
// machine that may be running other suites too: a request starved of CPU for
// seconds is not one the fleet dropped. A dropped request is refused, reset,
// or answered 502/503 by the LB, at once; a request that hangs for 10 s is
// still counted.
const testProbeTimeout = 10 * time.Second

func mythexBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: starts a fleet of real processes")
	}
	bin, err := testbin.Build(testbin.Mythex)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// appBin is the sample app alone, which runs the fleets' services
// (demo.FleetOptions.AppExe): it starts on a fifth of the mythex binary's CPU.
func appBin(t *testing.T) string {
	t.Helper()
	bin, err := testbin.Build(testbin.App)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func startFleet(t *testing.T, hosts int) *demo.Fleet {
	t.Helper()
	cfg, err := demo.SuiteConfig(testScale) // the after profile, testCheckTimeout
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return launchFleet(ctx, t, demo.FleetOptions{Config: cfg, Hosts: hosts, Dir: fleetDir(t)})
}

// openFleet starts the fleet o describes, with the tests' binaries (Exe and
// AppExe), closed when the test ends; nothing is deployed on it yet.
func openFleet(ctx context.Context, t *testing.T, o demo.FleetOptions) *demo.Fleet {
	t.Helper()
	o.Exe, o.AppExe = mythexBin(t), appBin(t)
	f, err := demo.StartFleet(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("close fleet: %v", err)
		}
	})
	return f
}

// launchFleet starts the fleet o describes (openFleet) and rolls out v1; a
// failure shows the tail of the failed host's agent log.
func launchFleet(ctx context.Context, t *testing.T, o demo.FleetOptions) *demo.Fleet {
	t.Helper()
	f := openFleet(ctx, t, o)
	if _, err := f.FirstRollout(ctx, "v1"); err != nil {
		host := "web-1"
		if se := (*deploy.StepError)(nil); errors.As(err, &se) {
			host = se.Host
		}
		t.Fatalf("first rollout (%s LB): %v\n%s", cmp.Or(o.LB, demo.LBEmbedded), err, f.LogTail(host, 3000))
	}
	return f
}

// runUnderLoad runs the demo with one deploy under 100 req/s on hosts
// behind lb (the after profile at the tests' scale) and checks what every
// such run must show: the deploy passed on every host, no request reached
// nothing or failed in the app, enough were sent, and at the end the fleet
// answers v2 only. It returns the summary for the caller's own checks.
func runUnderLoad(t *testing.T, lb string, hosts int) (demo.Summary, demo.DeployReport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sum, err := demo.Run(ctx, demo.Options{Profile: demo.ProfileAfter, TimeScale: testScale, Hosts: hosts, Rate: 100, Deploys: 1, Exe: mythexBin(t), AppExe: appBin(t),
		Dir: fleetDir(t), ProbeTimeout: testProbeTimeout, LB: lb, Adjust: func(c *fleet.Config) { c.LoadBalancer.HealthCheck.Timeout = testCheckTimeout }})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Deploys) != 1 {
		t.Fatalf("deploys = %d", len(sum.Deploys))
	}
	d := sum.Deploys[0]
	if !d.OK || len(d.Hosts) != hosts {
		t.Fatalf("deploy (%s LB): ok=%v hosts=%d err=%s", lb, d.OK, len(d.Hosts), d.Error)
	}
	if sum.ReachedNothing != 0 || sum.AppErrors != 0 {
		t.Errorf("%s LB: reached nothing %d, app errors %d; want 0 (probe %+v)", lb, sum.ReachedNothing, sum.AppErrors, d.Probe)
	}
	if d.Probe.Requests < 100 {
		t.Errorf("only %d requests were sent", d.Probe.Requests)
	}
	if last := d.Versions[len(d.Versions)-1]; strings.Join(last.Versions, ",") != "v2" {
		t.Errorf("at the end the fleet answers %v, want v2 only (spans %+v)", last.Versions, d.Versions)
	}
	return sum, d
}

// fleetDir is a fresh directory for a fleet; if the test fails, the tail of
// every log the fleet wrote there (agents, services) is shown.
func fleetDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() { // runs before the directory is removed
		if !t.Failed() {
			return
		}
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
				return nil
			}
			b, _ := os.ReadFile(path)
			if len(b) > 1500 {
				b = b[len(b)-1500:]
			}
			t.Logf("--- %s (tail):\n%s", strings.TrimPrefix(path, dir), b)
			return nil
		})
	})
	return dir
}

// underLoad starts the prober against the fleet; stop returns its report.
func underLoad(t *testing.T, f *demo.Fleet, rate float64) (stop func() probe.Report) {
	t.Helper()
	p, err := probe.New(probe.Config{URL: f.URL(), Rate: rate, Timeout: testProbeTimeout}, probe.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return func() probe.Report {
		// A tail as long as the LB needs to notice a target gone.
		hc := f.Loaded.LoadBalancer.HealthCheck
		time.Sleep(hc.Interval*time.Duration(hc.UnhealthyThreshold) + hc.Timeout)
		return p.Stop()
	}
}

func versionOf(t *testing.T, c *agentapi.Client) string {
	t.Helper()
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Definitions.Current == nil {
		return ""
	}
	return st.Definitions.Current.Version
}

func TestDemo_DeployUnderLoadDropsNothing(t *testing.T) {
	t.Parallel()
	testbin.FleetSlot(t)
	sum, d := runUnderLoad(t, demo.LBEmbedded, 3)
	for _, h := range d.Hosts {
		if h.Seconds < h.BoundSeconds {
			t.Errorf("%s took %.2fs, less than its lower bound %.2fs: the bound is wrong", h.Host, h.Seconds, h.BoundSeconds)
		}
	}
	if !sum.OK() {
		t.Error("summary not OK")
	}
	if len(sum.AgentRSSMB) != 3 {
		t.Errorf("agent RSS = %v, want one per host", sum.AgentRSSMB)
	}
	// The release binary's agents, the watchdog on, after a deploy under
	// load. A guard against leaks, not a target: one mythex binary carries
	// every command (the Kubernetes API types of `check` among them), and
	// their code pages count in the agent's resident memory (about 33 MiB
	// at start, 36 here, on a 2-core machine in December 2026).
	for h, mb := range sum.AgentRSSMB {
		if mb <= 1 || mb > 64 {
			t.Errorf("%s agent RSS %.1f MiB, want ≤ 64 MiB", h, mb)
		}
	}
	// The demo ends with mythex status of its fleet: every host on v2.
	if st := sum.Status; st == nil || !st.OK || len(st.Hosts) != 3 || strings.Join(st.Versions, ",") != "v2" {
		t.Errorf("closing status = %+v; want 3 hosts, healthy, all on v2", st)
	}
}

func TestDemo_BeforeProfileDropsRequests(t *testing.T) {
	t.Parallel()
	testbin.FleetSlotFirst(t) // 20 s or more: among the longest fleets
	bin := mythexBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sum, err := demo.Run(ctx, demo.Options{Profile: demo.ProfileBefore, TimeScale: 0.05, Hosts: 2, Rate: 100, Exe: bin, AppExe: appBin(t), Dir: fleetDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	if sum.ReachedNothing == 0 {
		t.Errorf("the before profile dropped nothing: %+v", sum.Deploys[0].Probe)
	}
	if sum.OK() {
		t.Error("a demo that dropped requests reports OK")
	}
}

func TestFleet_NewVersionNeverHealthyIsRolledBack(t *testing.T) {
	t.Parallel()
	testbin.FleetSlot(t)
	f := startFleet(t, 3)
	web1 := f.Agent(0)
	st, _ := web1.Status(context.Background())
	v1Hash := st.Definitions.Current.Hash
	v1Bytes, err := os.ReadFile(filepath.Join(f.HostDir("web-1"), "definitions", v1Hash+".json"))
	if err != nil {
		t.Fatal(err)
	}
	stop := underLoad(t, f, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := f.Deploy(ctx, "v2", map[string]string{"CRASH_ON_START": "100ms"}, nil)
	rep := stop()
	var se *deploy.StepError
	if !errors.As(err, &se) || se.Host != "web-1" || se.Phase != deploy.PhaseStart || !se.RolledBack {
		t.Fatalf("err = %v, want web-1 failing at start, rolled back", err)
	}
	if !strings.Contains(err.Error(), "exited with code 1") {
		t.Errorf("the error does not say why: %v", err)
	}
	if len(res.Hosts) != 1 {
		t.Errorf("%d hosts attempted, want the rollout to stop at web-1", len(res.Hosts))
	}
	for i := range 3 {
		if v := versionOf(t, f.Agent(i)); v != "v1" {
			t.Errorf("web-%d is on %q, want v1", i+1, v)
		}
	}
	st, _ = web1.Status(context.Background())
	if st.Definitions.Current.Hash != v1Hash {
		t.Fatalf("web-1's current definition is %s, want the v1 one %s", st.Definitions.Current.Hash, v1Hash)
	}
	got, err := os.ReadFile(filepath.Join(f.HostDir("web-1"), "definitions", v1Hash+".json"))
	if err != nil || string(got) != string(v1Bytes) {
		t.Errorf("v1 definition not restored byte for byte (%v)", err)
	}
	if rep.ReachedNothing != 0 {
		t.Errorf("%d requests reached nothing during a failed deploy; the fleet must serve throughout", rep.ReachedNothing)
	}
	if vr, err := web1.Verify(context.Background(), nil, "v1"); err != nil || !vr.OK {
		t.Errorf("web-1 after rollback: %+v %v", vr, err)
	}
}

func TestFleet_DeployKilledMidDrainHostRecovers(t *testing.T) {
	t.Parallel()
	testbin.FleetSlot(t)
	bin := mythexBin(t)
	f := startFleet(t, 2)
	cmd := exec.Command(bin, "deploy", "-f", f.Loaded.Path, "--version", "v2", "--json")
	cmd.Env = append(os.Environ(), "MYTHEX_AGENT_TOKEN="+f.AgentToken, "MYTHEX_LB_TOKEN="+f.LBToken)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	killed := false
	for sc.Scan() {
		var e deploy.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Host == "web-1" && e.Phase == deploy.PhaseStop && e.Kind == deploy.EventBegin {
			// Drained and stopping: the worst moment to die.
			_ = cmd.Process.Kill()
			killed = true
			break
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatal("the deploy never reached web-1's stop phase")
	}
	// The lease lapses (deploy.lease_ttl), the agent restores v1 and puts
	// the target back; the LB then calls it healthy.
	lbc := lbapi.NewClient("http://"+f.Loaded.LoadBalancer.AdminListen, f.LBToken, nil)
	deadline := time.Now().Add(f.Loaded.Deploy.LeaseTTL + time.Minute)
	for {
		t1, err := lbc.Target(context.Background(), "web-1")
		st, serr := f.Agent(0).Status(context.Background())
		if err == nil && serr == nil && t1.InRotation && t1.State.String() == "healthy" &&
			st.Lease == nil && st.Definitions.Current != nil && st.Definitions.Current.Version == "v1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("web-1 not back: lb %+v (%v), agent %+v (%v)\n%s", t1, err, st, serr, f.LogTail("web-1", 3000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if vr, err := f.Agent(0).Verify(context.Background(), nil, "v1"); err != nil || !vr.OK {
		t.Errorf("web-1 verify v1 after recovery: %+v %v", vr, err)
	}
	// The fleet lease lapsed too: a new deploy may run, and succeeds.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := f.Deploy(ctx, "v3", nil, nil); err != nil {
		t.Errorf("a deploy after the recovery: %v", err)
	}
}

// deployCmd starts `mythex deploy --json` against the fleet.
func deployCmd(t *testing.T, bin string, f *demo.Fleet, version string) (*exec.Cmd, *bufio.Scanner, func() error) {
	t.Helper()
	cmd := exec.Command(bin, "deploy", "-f", f.Loaded.Path, "--version", version, "--json")
	cmd.Env = append(os.Environ(), "MYTHEX_AGENT_TOKEN="+f.AgentToken, "MYTHEX_LB_TOKEN="+f.LBToken)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewScanner(out), func() error {
		err := cmd.Wait()
		if err != nil {
			return fmt.Errorf("%w: %s", err, stderr.String())
		}
		return nil
	}
}

// The issue: a deploy frozen (SIGSTOP) past its lease and resumed still
// changed the load balancer. Now the agents recover while it is frozen, and
// once resumed it changes nothing anywhere.
func TestDeployCommand_FrozenPastItsLeaseChangesNothing(t *testing.T) {
	t.Parallel() // its own fleet: processes, ports and directories
	testbin.FleetSlot(t)
	bin := mythexBin(t)
	f := startFleet(t, 2)
	cmd, sc, wait := deployCmd(t, bin, f, "v2")
	frozen := false
	for sc.Scan() {
		var e deploy.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Host == "web-1" && e.Phase == deploy.PhaseStop && e.Kind == deploy.EventBegin {
			if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			frozen = true
			break
		}
	}
	if !frozen {
		t.Fatal("the deploy never reached web-1's stop phase")
	}
	// While it is frozen its leases lapse; the agents return web-1 to v1
	// and put it back into the load balancer.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	v, why := f.Settle(ctx, f.Loaded.Deploy.LeaseTTL+time.Minute)
	if v != "v1" {
		t.Fatalf("the fleet did not settle on v1 while the deployer was frozen: %s\n%s", why, f.LogTail("web-1", 3000))
	}
	before, _ := f.Agent(0).Status(ctx)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	err := wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(err.Error(), "lease lost") {
		t.Errorf("resumed deploy = %v; want exit 1 saying its lease was lost", err)
	}
	// Nothing changed after it resumed: the same definitions, every target
	// still healthy and in rotation on v1.
	if v, why := f.Settle(ctx, 0); v != "v1" { // one look, no waiting
		t.Errorf("after the resumed deploy the fleet is not settled on v1: %s", why)
	}
	after, _ := f.Agent(0).Status(ctx)
	if after.Definitions.Current == nil || before.Definitions.Current == nil || after.Definitions.Current.Hash != before.Definitions.Current.Hash {
		t.Errorf("web-1's definition changed after the deployer resumed: %+v → %+v", before.Definitions, after.Definitions)
	}
}

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/demo"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/fleetstatus"
	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/lbport/embedded"
	"github.com/mythex/mythex/internal/termui"
	"github.com/mythex/mythex/internal/testbin"
)

// TestFleet_SharedByCommandTests runs the tests that only read a fleet, or
// are refused before they touch it, on one fleet, in turn: a fleet of real
// processes costs a start and a first rollout, and none of these needs its
// own. The order matters: the refusals and the reads first (the fleet stays
// on v1, which they check), then the two that deploy (v2, then v4). Each
// subtest leaves the fleet whole for the next; one that cannot fails saying
// so.
func TestFleet_SharedByCommandTests(t *testing.T) {
	t.Parallel()              // its own fleet: processes, ports and directories
	testbin.FleetSlotFirst(t) // 20 s or more: among the longest fleets
	f := startFleet(t, 2)
	steps := []struct {
		name string
		run  func(*testing.T, *demo.Fleet)
	}{
		{"deploy refused before touching anything", refusesBeforeTouchingAnything},
		{"bad definition refused before touching anything", badDefinitionRefusedBeforeTouchingAnything},
		{"status", fleetStatus},
		{"second deploy refused", secondDeployRefused},
		{"closed stdout does not stop the deploy", closedStdoutDoesNotStopTheDeploy},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.run(t, f) }) {
			return // the fleet may not be whole: the next would fail for it
		}
	}
}

// fleetStatus: `mythex status` on a real fleet says healthy after a
// rollout, and names the host the load balancer no longer routes to.
func fleetStatus(t *testing.T, f *demo.Fleet) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lbc := lbapi.NewClient("http://"+f.Loaded.LoadBalancer.AdminListen, f.LBToken, nil)
	driver := embedded.New(lbc)
	pool := agentconn.NewPool(agentconn.Options{})
	defer pool.Close()

	v := fleetstatus.Gather(ctx, f.Loaded, f.AgentToken, driver, pool, 10*time.Second)
	var out bytes.Buffer
	termui.WriteStatus(&out, v)
	if !v.OK || strings.Join(v.Versions, ",") != "v1" || len(v.Hosts) != 2 {
		t.Fatalf("after the rollout: %+v\n%s", v, out.String())
	}
	for _, want := range []string{"web-1", "web-2", "current v1", "lb: healthy, in rotation", "gateway up", "✓ healthy: 2 of 2 hosts on v1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, out.String())
		}
	}

	if _, err := lbc.Deregister(ctx, "web-2"); err != nil {
		t.Fatal(err)
	}
	defer func() { // the fleet is shared: leave it whole for the next subtest
		if _, err := lbc.Register(context.Background(), "web-2", f.Loaded.Hosts[1].Target); err != nil {
			t.Errorf("register web-2 again: %v", err)
		}
		if v, why := f.Settle(ctx, 30*time.Second); v != "v1" {
			t.Fatalf("web-2 registered again, the fleet did not settle on v1: %s", why)
		}
	}()
	v = fleetstatus.Gather(ctx, f.Loaded, f.AgentToken, driver, pool, 10*time.Second)
	out.Reset()
	termui.WriteStatus(&out, v)
	if v.OK || !strings.Contains(v.Summary, "web-2") || strings.Contains(v.Summary, "web-1") {
		t.Fatalf("with web-2 deregistered: %q\n%s", v.Summary, out.String())
	}
	if !strings.Contains(out.String(), "! out of rotation at the load balancer") {
		t.Errorf("the problem is not shown:\n%s", out.String())
	}
}

func secondDeployRefused(t *testing.T, f *demo.Fleet) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	started := make(chan struct{})
	var once bool
	first := make(chan error, 1)
	go func() {
		_, err := f.Deploy(ctx, "v2", nil, deploy.ObserverFunc(func(e deploy.Event) {
			if e.Phase == deploy.PhaseLease && !once {
				once = true
				close(started)
			}
		}))
		first <- err
	}()
	<-started
	_, err := f.Deploy(ctx, "v3", nil, nil)
	if !errors.Is(err, deploy.ErrInProgress) || !strings.Contains(err.Error(), "mythex demo v2") {
		t.Errorf("second deploy = %v, want ErrInProgress naming the first", err)
	}
	if err := <-first; err != nil {
		t.Errorf("first deploy: %v", err)
	}
	for i := range 2 {
		if v := versionOf(t, f.Agent(i)); v != "v2" {
			t.Errorf("web-%d on %q, want v2 (never v3: the second deploy must not interleave)", i+1, v)
		}
	}
}

func refusesBeforeTouchingAnything(t *testing.T, f *demo.Fleet) {
	bin := mythexBin(t)
	bad := filepath.Join(t.TempDir(), "bad.yml")
	if err := os.WriteFile(bad, []byte("load_balancer:\n  helth_check: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A fleet whose second agent is unreachable.
	cfgBytes, _ := os.ReadFile(f.Loaded.Path)
	unreachable := filepath.Join(filepath.Dir(f.Loaded.Path), "unreachable.yml")
	if err := os.WriteFile(unreachable, []byte(strings.Replace(string(cfgBytes), f.Loaded.Hosts[1].Agent, "127.0.0.1:1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, file, token, want string
	}{
		{"bad config", bad, f.AgentToken, "helth_check"},
		{"unreachable agent", unreachable, f.AgentToken, "nothing was changed"},
		{"wrong agent token", f.Loaded.Path, "wrong", "token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "deploy", "-f", tc.file, "--version", "v9")
			cmd.Env = append(os.Environ(), "MYTHEX_AGENT_TOKEN="+tc.token, "MYTHEX_LB_TOKEN="+f.LBToken)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit = %v, want 2\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
			for i := range 2 {
				if v := versionOf(t, f.Agent(i)); v != "v1" {
					t.Errorf("web-%d changed to %q", i+1, v)
				}
			}
		})
	}
}

// The issue: `mythex deploy --json | head` rolled web-1 back. A closed
// stdout drops the output and the deploy goes on to the end.
func closedStdoutDoesNotStopTheDeploy(t *testing.T, f *demo.Fleet) {
	bin := mythexBin(t)
	cmd := exec.Command(bin, "deploy", "-f", f.Loaded.Path, "--version", "v4", "--json")
	cmd.Env = append(os.Environ(), "MYTHEX_AGENT_TOKEN="+f.AgentToken, "MYTHEX_LB_TOKEN="+f.LBToken)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// head -1
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, `"phase"`) {
		t.Fatalf("first line %q, %v", line, err)
	}
	out.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("deploy with a closed stdout: %v", err)
	}
	for i := range 2 {
		if v := versionOf(t, f.Agent(i)); v != "v4" {
			t.Errorf("web-%d on %q, want v4", i+1, v)
		}
	}
}

// Bad input is refused before anything changes, exit 2: a deploy.verify
// entry the compose file lacks (the issue restarted web-1 twice before
// failing on it), a missing executable.
func badDefinitionRefusedBeforeTouchingAnything(t *testing.T, f *demo.Fleet) {
	bin := mythexBin(t)
	write := func(name string, mod func(*fleet.Config)) string {
		c := f.Loaded.Config
		c.Hosts = append([]fleet.Host(nil), c.Hosts...)
		for i := range c.Hosts {
			c.Hosts[i].Vars = maps.Clone(c.Hosts[i].Vars)
		}
		c.Deploy.Verify = append([]string(nil), c.Deploy.Verify...)
		mod(&c)
		b, err := fleet.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(filepath.Dir(f.Loaded.Path), name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, file, want string
	}{
		{"verify names no service", write("verify.yml", func(c *fleet.Config) { c.Deploy.Verify = append(c.Deploy.Verify, "billing") }), "deploy.verify[4]"},
		{"missing executable", write("exe.yml", func(c *fleet.Config) { c.Hosts[1].Vars["APP_BIN"] = "/nonexistent/mythex" }), "/nonexistent/mythex"},
		{"missing compose", write("compose.yml", func(c *fleet.Config) { c.Deploy.Compose = "nope.yaml" }), "deploy.compose"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "deploy", "-f", tc.file, "--version", "v9")
			cmd.Env = append(os.Environ(), "MYTHEX_AGENT_TOKEN="+f.AgentToken, "MYTHEX_LB_TOKEN="+f.LBToken)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit = %v, want 2\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
			for i := range 2 {
				st, _ := f.Agent(i).Status(context.Background())
				if st.Definitions.Current.Version != "v1" || st.Lease != nil || st.FleetLease != nil {
					t.Errorf("web-%d was touched: %+v", i+1, st.Definitions)
				}
			}
		})
	}
	// mythex check reports the verify/compose mismatch too.
	out, err := exec.Command(bin, "check", "-f", cases[0].file).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "billing") {
		t.Errorf("check of a verify naming no service: %v\n%s", err, out)
	}
}

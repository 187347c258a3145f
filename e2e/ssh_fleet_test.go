package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/demo"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/probe"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testsshd"
	"github.com/mythex/mythex/internal/transport"
)

// sshFleetCompose is the hosts' one definition: the sample app's gateway on
// every address of its machine (as a server binds), so the load balancer
// reaches it on the host's veth address and the agent's checks on loopback.
const sshFleetCompose = `name: ssh-fleet
services:
  gateway:
    image: mythex/app:${MYTHEX_VERSION}
    command: [sample-app]
    environment:
      MYTHEX_APP_VERSION: ${MYTHEX_VERSION}
      MYTHEX_APP_HOST_NAME: ${MYTHEX_HOST}
      MYTHEX_APP_HEALTH_PATH: ${MYTHEX_HEALTH_PATH}
      MYTHEX_APP_DRAIN_SERVE_PERIOD: ${MYTHEX_DRAIN_SERVE_PERIOD}
      MYTHEX_APP_SHUTDOWN_TIMEOUT: ${MYTHEX_DRAIN_SHUTDOWN_TIMEOUT}
      MYTHEX_APP_IDLE_TIMEOUT: ${MYTHEX_KEEPALIVE_IDLE_TIMEOUT}
      MYTHEX_APP_SERVICE: gateway
      MYTHEX_APP_LISTEN: 0.0.0.0:${MYTHEX_TARGET_PORT}
    stop_grace_period: ${MYTHEX_STOP_GRACE_PERIOD}
    healthcheck:
      interval: ${MYTHEX_HEALTH_INTERVAL}
      timeout: ${MYTHEX_HEALTH_TIMEOUT}
      retries: 3
      start_period: 5s
      start_interval: 50ms
    x-mythex: {executable: "${APP_BIN}", port: "${MYTHEX_TARGET_PORT}", health_path: "${MYTHEX_HEALTH_PATH}"}
`

// netnsHost is one "machine": a network namespace joined to the test's by a
// veth pair, running sshd, the agent on its own loopback, and the app on
// its veth address.
type netnsHost struct {
	name, ns, addr string
	sshd           *testsshd.Server
	proxy          *testsshd.Proxy
	agent          *exec.Cmd
	agentDone      chan struct{}
}

// TestSSHFleet_RollingDeployOverSSH runs the rolling deploy with `mythex
// deploy` (the real command) on two hosts, each in its own network
// namespace, whose agents listen on the namespace's loopback and are reached
// over SSH only (each host's sshd behind a proxy that can cut connections).
// Under the prober's load, the SSH connection to web-1 is cut as its drain
// begins: the deploy carries over (the tunnel connects again within the
// deploy's retry bound), succeeds, and not one request reaches nothing.
// Then, nothing changed in either case: a changed host key is refused with
// its fingerprint (exit 2), and an agent that is down behind a working SSH
// connection is named (exit 2).
func TestSSHFleet_RollingDeployOverSSH(t *testing.T) {
	t.Parallel() // its own namespaces, processes, ports and directories
	if testing.Short() {
		t.Skip("end-to-end: network namespaces, sshd and a fleet of real processes")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes network namespaces (ip netns) and runs sshd")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2) to make network namespaces")
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		t.Skip("needs /usr/sbin/sshd (Debian's openssh-server)")
	}
	testbin.FleetSlotFirst(t) // 20 s or more: among the longest fleets
	bin, err := testbin.Build(testbin.Mythex)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := demo.SuiteConfig(0.1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	agentTok, lbTok := "agent-0123456789abcdef0123", "lb-0123456789abcdef0123"

	// The machines: a namespace each, sshd on its veth address.
	tag := os.Getpid() % 10000
	subnet := 100 + os.Getpid()%100
	var hosts []*netnsHost
	var identity string
	var knownHosts bytes.Buffer
	for i := range 2 {
		h := &netnsHost{name: fmt.Sprintf("web-%d", i+1), ns: fmt.Sprintf("mythex-e2e-%d-%d", tag, i),
			addr: fmt.Sprintf("10.%d.%d.2", subnet, i+1)}
		makeNetns(t, h.ns, fmt.Sprintf("mxv%d-%d", tag, i), fmt.Sprintf("10.%d.%d.1", subnet, i+1), h.addr)
		h.sshd = testsshd.StartWith(t, testsshd.Options{NetNS: h.ns, ListenAddress: h.addr, Port: 2222, Identity: identity})
		identity = h.sshd.Identity
		h.proxy = testsshd.NewProxy(t, h.sshd.Addr)
		b, err := os.ReadFile(h.sshd.KnownHostsAt(t, h.proxy.Addr))
		if err != nil {
			t.Fatal(err)
		}
		knownHosts.Write(b)
		hosts = append(hosts, h)
	}
	// The deployer's home: known_hosts and its key, as ssh has them.
	home := filepath.Join(dir, "home")
	writeFile(t, filepath.Join(home, ".ssh", "known_hosts"), knownHosts.Bytes())
	key, err := os.ReadFile(identity)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, ".ssh", "id_ed25519"), key)

	ports := freeLoopbackPorts(t, 2)
	cfg.LoadBalancer.Kind = fleet.KindEmbedded
	cfg.LoadBalancer.Listen, cfg.LoadBalancer.AdminListen = ports[0], ports[1]
	cfg.Deploy.Compose = "compose.yaml"
	cfg.Deploy.Verify = []string{"gateway"}
	cfg.Deploy.TargetServices = []string{"gateway"}
	cfg.Hosts = nil
	for _, h := range hosts {
		cfg.Hosts = append(cfg.Hosts, fleet.Host{Name: h.name, Target: h.addr + ":8080", Agent: "127.0.0.1:9201",
			SSH: h.sshd.User + "@" + h.proxy.Addr, Vars: map[string]string{"APP_BIN": bin}})
	}
	writeFile(t, filepath.Join(dir, "compose.yaml"), []byte(sshFleetCompose))
	b, err := fleet.Encode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "mythex.yml")
	writeFile(t, path, b)
	loaded, err := fleet.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+home, "SSH_AUTH_SOCK=", "MYTHEX_AGENT_TOKEN="+agentTok, "MYTHEX_LB_TOKEN="+lbTok)

	startProcess(t, dir, "lb", env, bin, "lb", "-f", path)
	for _, h := range hosts {
		h.agent, h.agentDone = startProcess(t, dir, h.name+"-agent", env, "ip", "netns", "exec", h.ns, bin,
			"agent", "-f", path, "--host", h.name, "--state-dir", filepath.Join(dir, "state", h.name), "--stop-services-on-exit")
	}
	// Ready: every agent answers over SSH, as the deployer will reach it.
	pool := agentconn.NewPool(agentconn.Options{SSH: transport.SSHOptions{KnownHosts: []string{filepath.Join(home, ".ssh", "known_hosts")},
		IdentityFiles: []string{identity}, NoAgent: true}, Timeout: 5 * time.Second})
	defer pool.Close()
	status := func(i int) (agentapi.Status, error) {
		c, err := pool.Connect(ctx, loaded, loaded.Hosts[i], agentTok)
		if err != nil {
			return agentapi.Status{}, err
		}
		return c.Status(ctx)
	}
	for i := range hosts {
		waitReady(t, 30*time.Second, fmt.Sprintf("%s's agent over SSH", hosts[i].name), func() error { _, err := status(i); return err })
	}
	waitReady(t, 10*time.Second, "the load balancer", func() error {
		c, err := net.DialTimeout("tcp", cfg.LoadBalancer.Listen, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})

	mythexDeploy := func(version string, home string, onEvent func(deploy.Event)) (int, string, string) {
		cmd := exec.CommandContext(ctx, bin, "deploy", "-f", path, "--version", version, "--json")
		cmd.Env = append(append([]string(nil), env...), "HOME="+home)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var stdout strings.Builder
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			stdout.WriteString(sc.Text() + "\n")
			var e deploy.Event
			if onEvent != nil && json.Unmarshal(sc.Bytes(), &e) == nil {
				onEvent(e)
			}
		}
		err = cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stdout.String(), stderr.String()
	}
	current := func() string {
		var vs []string
		for i := range hosts {
			st, err := status(i)
			if err != nil {
				t.Fatalf("%s: %v", hosts[i].name, err)
			}
			vs = append(vs, st.Definitions.Current.Version)
		}
		return strings.Join(vs, ",")
	}

	if code, out, errOut := mythexDeploy("v1", home, nil); code != 0 {
		t.Fatalf("first rollout over SSH: exit %d\n%s\n%s", code, out, errOut)
	}

	p, err := probe.New(probe.Config{URL: "http://" + cfg.LoadBalancer.Listen + "/", Rate: 100, Timeout: testProbeTimeout}, probe.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var cut sync.Once
	cutN := 0
	before := hosts[0].proxy.Accepted()
	code, out, errOut := mythexDeploy("v2", home, func(e deploy.Event) {
		if e.Host == "web-1" && e.Phase == deploy.PhaseDrain && e.Kind == deploy.EventBegin {
			cut.Do(func() { cutN = hosts[0].proxy.Cut() })
		}
	})
	// A tail as long as the load balancer needs to notice a target gone.
	hc := cfg.LoadBalancer.HealthCheck
	time.Sleep(hc.Interval*time.Duration(hc.UnhealthyThreshold) + hc.Timeout)
	rep := p.Stop()
	if code != 0 {
		t.Fatalf("deploy of v2 with web-1's SSH connection cut: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("v2 over SSH: cut %d connection(s) to web-1 mid-drain; the deploy made %d SSH connections to web-1; requests %d, reached nothing %d %v",
		cutN, hosts[0].proxy.Accepted()-before, rep.Requests, rep.ReachedNothing, rep.Reasons)
	if cutN == 0 {
		t.Errorf("no SSH connection to web-1 was open when its drain began")
	}
	if made := hosts[0].proxy.Accepted() - before; made < 2 {
		t.Errorf("the deploy made %d SSH connection(s) to web-1; want its first and a new one after the cut", made)
	}
	if rep.Requests < 100 {
		t.Errorf("only %d requests sent", rep.Requests)
	}
	if rep.ReachedNothing != 0 {
		t.Errorf("%d requests reached nothing (%v), want 0", rep.ReachedNothing, rep.Reasons)
	}
	if got := current(); got != "v2,v2" {
		t.Fatalf("after the deploy the hosts run %s, want v2 on both", got)
	}

	t.Run("a changed host key is refused before anything changes", func(t *testing.T) {
		bad := filepath.Join(dir, "home-bad-key")
		other, err := os.ReadFile(testsshd.OtherKnownHostsAt(t, hosts[0].proxy.Addr))
		if err != nil {
			t.Fatal(err)
		}
		good, err := os.ReadFile(hosts[1].sshd.KnownHostsAt(t, hosts[1].proxy.Addr))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(bad, ".ssh", "known_hosts"), append(other, good...))
		writeFile(t, filepath.Join(bad, ".ssh", "id_ed25519"), key)
		code, out, errOut := mythexDeploy("v3", bad, nil)
		if code != 2 || !strings.Contains(errOut, "host web-1") || !strings.Contains(errOut, "host key differs from known_hosts") || !strings.Contains(errOut, "SHA256:") {
			t.Fatalf("deploy with web-1's key changed: exit %d\n%s\n%s; want 2 naming web-1 and the fingerprint", code, out, errOut)
		}
		if got := current(); got != "v2,v2" {
			t.Errorf("after the refusal the hosts run %s, want v2 untouched", got)
		}
	})
	t.Run("an agent down behind a working SSH connection is named", func(t *testing.T) {
		h := hosts[1]
		_ = h.agent.Process.Signal(syscall.SIGTERM)
		<-h.agentDone
		code, out, errOut := mythexDeploy("v3", home, nil)
		if code != 2 || !strings.Contains(errOut, "host web-2") {
			t.Fatalf("deploy with web-2's agent down: exit %d\n%s\n%s; want 2 naming web-2", code, out, errOut)
		}
		st, err := status(0)
		if err != nil || st.Definitions.Current.Version != "v2" || st.Lease != nil {
			t.Errorf("web-1 after the refusal: %+v %v; want v2, no lease", st.Definitions.Current, err)
		}
	})
}

// makeNetns makes network namespace ns joined to the test's by a veth pair
// (hostIf in the test's namespace with hostAddr, the other end in ns with
// nsAddr, /24), loopback up; removed when the test ends. It skips the test
// when namespaces cannot be made here.
func makeNetns(t *testing.T, ns, hostIf, hostAddr, nsAddr string) {
	t.Helper()
	ip := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := ip("netns", "add", ns); err != nil {
		t.Skipf("cannot make a network namespace here: %v", err)
	}
	t.Cleanup(func() {
		// Removing the namespace destroys its end of the pair, and so both.
		_ = ip("link", "del", hostIf)
		_ = ip("netns", "del", ns)
	})
	peer := hostIf + "p"
	for _, args := range [][]string{
		{"link", "add", hostIf, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", ns},
		{"addr", "add", hostAddr + "/24", "dev", hostIf},
		{"link", "set", hostIf, "up"},
		{"netns", "exec", ns, "ip", "link", "set", "lo", "up"},
		{"netns", "exec", ns, "ip", "addr", "add", nsAddr + "/24", "dev", peer},
		{"netns", "exec", ns, "ip", "link", "set", peer, "up"},
	} {
		if err := ip(args...); err != nil {
			t.Fatal(err)
		}
	}
}

// startProcess starts a process logging to dir/name.log, stopped (SIGTERM,
// then SIGKILL) when the test ends; the channel is closed once it exited.
func startProcess(t *testing.T, dir, name string, env []string, exe string, args ...string) (*exec.Cmd, chan struct{}) {
	t.Helper()
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			if len(b) > 3000 {
				b = b[len(b)-3000:]
			}
			t.Logf("%s log (tail):\n%s", name, b)
		}
	})
	return cmd, done
}

// waitReady polls ok until it returns nil, failing the test after within.
func waitReady(t *testing.T, within time.Duration, what string, ok func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := ok()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %v: %v", what, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// freeLoopbackPorts returns n free 127.0.0.1:port addresses (freePorts).
func freeLoopbackPorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for _, p := range freePorts(t, n) {
		out = append(out, "127.0.0.1:"+strconv.Itoa(p))
	}
	return out
}

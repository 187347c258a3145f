package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/demo"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testsshd"
	"github.com/mythex/mythex/internal/transport"
)

// BenchmarkRemote measures, side by side in one run (bench/remote.sh runs
// it with -benchtime 1x):
//
//   - status_p50_s: `mythex status` (the real command, process start
//     included) on a 10-host local fleet, p50 of 20 runs; target < 1 s.
//   - ssh_vs_loopback: the mean per-host deploy time with every agent
//     reached over SSH (a real sshd, one connection per host) over the same
//     with loopback HTTP, alternating, two deploys each; target ≤ 1.05.
//   - call_loopback_us, call_ssh_us: one agent status call either way.
func BenchmarkRemote(b *testing.B) {
	bin, err := testbin.Build(testbin.Mythex)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := demo.SuiteConfig(0.1)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	startFleet := func(hosts int) *demo.Fleet {
		f, err := demo.StartFleet(ctx, demo.FleetOptions{Config: cfg, Hosts: hosts, Exe: bin, Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.FirstRollout(ctx, "v1"); err != nil {
			f.Close()
			b.Fatalf("first rollout: %v", err)
		}
		return f
	}

	for range b.N {
		// mythex status on 10 hosts.
		f := startFleet(10)
		var runs []time.Duration
		for range 20 {
			cmd := exec.CommandContext(ctx, bin, "status", "-f", f.Loaded.Path)
			cmd.Env = append(os.Environ(), "MYTHEX_AGENT_TOKEN="+f.AgentToken, "MYTHEX_LB_TOKEN="+f.LBToken)
			begin := time.Now()
			out, err := cmd.CombinedOutput()
			runs = append(runs, time.Since(begin))
			if err != nil {
				f.Close()
				b.Fatalf("mythex status: %v\n%s", err, out)
			}
		}
		f.Close()
		slices.Sort(runs)
		p50, p90 := runs[len(runs)/2], runs[len(runs)*9/10]

		// Deploys over SSH against loopback, on 3 hosts.
		f = startFleet(3)
		srv := testsshd.Start(b)
		sshCfg := *f.Loaded
		sshCfg.Hosts = slices.Clone(f.Loaded.Hosts)
		var known []byte
		for i := range sshCfg.Hosts {
			// A proxy per host: one SSH connection per host, as across
			// machines (the pool keeps one per user@address).
			p := testsshd.NewProxy(b, srv.Addr)
			sshCfg.Hosts[i].SSH = srv.User + "@" + p.Addr
			k, err := os.ReadFile(srv.KnownHostsAt(b, p.Addr))
			if err != nil {
				b.Fatal(err)
			}
			known = append(known, k...)
		}
		knownPath := filepath.Join(b.TempDir(), "known_hosts")
		if err := os.WriteFile(knownPath, known, 0o600); err != nil {
			b.Fatal(err)
		}
		sshOpts := agentconn.Options{SSH: transport.SSHOptions{KnownHosts: []string{knownPath}, IdentityFiles: []string{srv.Identity}, NoAgent: true}}
		perHost := map[bool][]float64{}
		for i, overSSH := range []bool{false, true, false, true} {
			loaded := f.Loaded
			if overSSH {
				loaded = &sshCfg
			}
			secs, err := deployVia(ctx, loaded, f, fmt.Sprintf("v%d", i+2), agentconn.NewPool(sshOpts))
			if err != nil {
				f.Close()
				b.Fatalf("deploy (ssh %v): %v", overSSH, err)
			}
			perHost[overSSH] = append(perHost[overSSH], secs...)
		}
		callLoop, err := callLatency(ctx, f.Loaded, f.AgentToken, agentconn.NewPool(sshOpts))
		if err != nil {
			b.Fatal(err)
		}
		callSSH, err := callLatency(ctx, &sshCfg, f.AgentToken, agentconn.NewPool(sshOpts))
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
		ratio := mean(perHost[true]) / mean(perHost[false])
		b.ReportMetric(p50.Seconds(), "status_p50_s")
		b.ReportMetric(p90.Seconds(), "status_p90_s")
		b.ReportMetric(mean(perHost[false]), "host_deploy_loopback_s")
		b.ReportMetric(mean(perHost[true]), "host_deploy_ssh_s")
		b.ReportMetric(ratio, "ssh_vs_loopback")
		b.ReportMetric(float64(callLoop.Microseconds()), "call_loopback_us")
		b.ReportMetric(float64(callSSH.Microseconds()), "call_ssh_us")
		b.Logf("mythex status, 10 hosts: p50 %v p90 %v (20 runs); per-host deploy: loopback %.3fs, SSH %.3fs, ratio %.3f; one status call: loopback %v, SSH %v",
			p50.Round(time.Millisecond), p90.Round(time.Millisecond), mean(perHost[false]), mean(perHost[true]), ratio, callLoop, callSSH)
	}
}

// deployVia deploys version to the fleet with its agents reached through
// pool (closed after), and returns each host's deploy seconds.
func deployVia(ctx context.Context, loaded *fleet.Loaded, f *demo.Fleet, version string, pool *agentconn.Pool) ([]float64, error) {
	defer pool.Close()
	o, err := deploy.ForFleet(ctx, loaded, version, f.AgentToken, f.LBToken, pool)
	if err != nil {
		return nil, err
	}
	d, err := deploy.New(o)
	if err != nil {
		return nil, err
	}
	res, err := d.Run(ctx)
	if err != nil {
		return nil, err
	}
	var secs []float64
	for _, h := range res.Hosts {
		secs = append(secs, h.Seconds)
	}
	return secs, nil
}

// callLatency is the mean time of one agent status call to the first host
// through pool (closed after), connection made beforehand.
func callLatency(ctx context.Context, loaded *fleet.Loaded, token string, pool *agentconn.Pool) (time.Duration, error) {
	defer pool.Close()
	c, err := pool.Connect(ctx, loaded, loaded.Hosts[0], token)
	if err != nil {
		return 0, err
	}
	if _, err := c.Status(ctx); err != nil {
		return 0, err
	}
	const n = 200
	begin := time.Now()
	for range n {
		if _, err := c.Status(ctx); err != nil {
			return 0, err
		}
	}
	return time.Since(begin) / n, nil
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

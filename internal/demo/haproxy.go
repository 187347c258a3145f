package demo

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport/haproxy/deploylb"
	"github.com/mythex/mythex/internal/lbport/haproxy/local"
)

// Load balancers the demo's fleet can sit behind.
const (
	// LBEmbedded is mythex's own load balancer, in the demo's process.
	LBEmbedded = fleet.KindEmbedded
	// LBHAProxy is a real HAProxy (Debian's haproxy package), started with a
	// generated haproxy.cfg and driven through its Runtime API.
	LBHAProxy = fleet.KindHAProxy
	// LBALB is the embedded load balancer driven as an AWS ALB: deploys go
	// through the alb driver and its ELBv2 endpoint.
	LBALB = fleet.KindALB
)

// haproxyBackend is the backend name of the demo's HAProxy.
const haproxyBackend = "fleet"

// useHAProxy points cfg at an HAProxy whose admin socket will be in dir.
func useHAProxy(cfg *fleet.Config, dir string) {
	cfg.LoadBalancer.Kind = fleet.KindHAProxy
	cfg.LoadBalancer.RuntimeAPI = "unix:" + filepath.Join(dir, "haproxy.sock")
	cfg.LoadBalancer.Backend = haproxyBackend
	cfg.LoadBalancer.ConfigFile = "haproxy.cfg"
}

// startHAProxy starts HAProxy in front of the fleet's hosts, with the
// fleet's health check numbers as inter, fall, rise and timeout check.
func (f *Fleet) startHAProxy(ctx context.Context) error {
	lbc := f.Loaded.LoadBalancer
	ln, err := net.Listen("tcp", lbc.Listen)
	if err != nil {
		return fmt.Errorf("haproxy frontend: %w", err)
	}
	defer ln.Close() // HAProxy holds its own copy
	var servers []local.Server
	for _, h := range f.Loaded.Hosts {
		servers = append(servers, local.Server{Name: h.ServerName(), Addr: h.Target})
	}
	hc := lbc.HealthCheck
	hx, err := local.Start(ctx, local.Options{
		Dir: f.dir, Listener: ln.(*net.TCPListener), Backend: lbc.Backend, Servers: servers,
		CheckPath: hc.Path, Inter: hc.Interval, Fall: hc.UnhealthyThreshold, Rise: hc.HealthyThreshold, TimeoutCheck: hc.Timeout,
	})
	if err != nil {
		return err
	}
	f.haproxy = hx
	return nil
}

// deployOptions builds a deploy of the fleet for its load balancer, its
// agents reached through agents.
func (f *Fleet) deployOptions(ctx context.Context, loaded *fleet.Loaded, version string, agents deploy.Connector) (deploy.Options, error) {
	if loaded.LoadBalancer.Kind == fleet.KindHAProxy {
		o, _, err := deploylb.ForFleet(ctx, loaded, version, f.AgentToken, agents)
		return o, err
	}
	return deploy.ForFleet(ctx, loaded, version, f.AgentToken, f.LBToken, agents)
}

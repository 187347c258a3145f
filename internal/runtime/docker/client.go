package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/versions"
	"github.com/docker/docker/client"
)

// ErrNoEngine is matched (errors.Is) by Connect's error when no Docker engine
// answers at the address.
var ErrNoEngine = errors.New("no Docker engine reachable")

// MinAPIVersion is the oldest Engine API version the runtime is built for:
// 1.41, Docker 20.10. Newer engines are used at their own version, up to the
// SDK's (API version negotiation).
const MinAPIVersion = "1.41"

// pingTimeout bounds Connect's ping.
const pingTimeout = 5 * time.Second

// Connect returns an Engine API client for the Docker engine at host, a
// Docker host URL like unix:///var/run/docker.sock or tcp://10.0.0.2:2375;
// empty means $DOCKER_HOST, else the default unix socket (as the docker CLI).
// The client negotiates the API version with the engine (the daemon may be
// older than the SDK: Docker 20.10 speaks API 1.41), and Connect pings the
// engine before returning, so a client it returns has reached a daemon. The
// caller closes the client.
//
// Errors: a malformed host; ErrNoEngine (wrapped, naming the address and the
// cause) when nothing answers within 5 seconds or ctx ends; an engine older
// than MinAPIVersion.
func Connect(ctx context.Context, host string) (*client.Client, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		addr := cli.DaemonHost()
		cli.Close()
		return nil, fmt.Errorf("docker: %w at %s: %v", ErrNoEngine, addr, err)
	}
	cli.NegotiateAPIVersion(pctx)
	if v := cli.ClientVersion(); versions.LessThan(v, MinAPIVersion) {
		cli.Close()
		return nil, fmt.Errorf("docker: the engine at %s speaks Engine API %s; mythex needs %s (Docker 20.10) or later", cli.DaemonHost(), v, MinAPIVersion)
	}
	return cli, nil
}

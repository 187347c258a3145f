// Package dockertest gives tests outside the Docker runtime a client of the
// machine's Docker engine, or skips them saying there is none. It is
// imported only from _test.go files.
package dockertest

import (
	"context"
	"errors"
	"testing"

	"github.com/docker/docker/client"

	"github.com/mythex/mythex/internal/runtime/docker"
)

// Engine connects to the engine the environment names (DOCKER_HOST, else the
// default socket) as the Docker runtime does (docker.Connect: pinged, Engine
// API ≥ 1.41), and closes the client when t ends. With no engine reachable
// (docker.ErrNoEngine) it skips t saying why; any other error, an engine
// that answers but cannot be used, fails t.
func Engine(t testing.TB) *client.Client {
	t.Helper()
	cli, err := docker.Connect(context.Background(), "")
	if errors.Is(err, docker.ErrNoEngine) {
		t.Skip(err) // it names the engine: "docker: no Docker engine reachable at …"
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

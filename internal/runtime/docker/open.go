package docker

import (
	"context"
	"errors"
	"io"
)

// Owned is a Docker runtime together with the engine client Open made for
// it; Close closes both (containers keep running).
type Owned struct {
	*Docker
	cli io.Closer
}

// Close closes the runtime, then its client.
func (r Owned) Close() error { return errors.Join(r.Docker.Close(), r.cli.Close()) }

// Open connects to the engine at host (Connect: "" is $DOCKER_HOST, else the
// local socket) and returns the runtime over it (opts.Client is set here).
// Errors are Connect's (ErrNoEngine: nothing ran) and New's.
func Open(ctx context.Context, host string, opts Options) (Owned, error) {
	cli, err := Connect(ctx, host)
	if err != nil {
		return Owned{}, err
	}
	opts.Client = cli
	d, err := New(opts)
	if err != nil {
		cli.Close()
		return Owned{}, err
	}
	return Owned{Docker: d, cli: cli}, nil
}

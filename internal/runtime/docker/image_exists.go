package docker

import (
	"context"
	"fmt"
)

// LocalImageExists asks the local Docker engine ($DOCKER_HOST, else the
// local socket) whether it has image; the
// deploy's preflight calls it for hosts whose agent runs on this machine
// with the Docker runtime.
func LocalImageExists(ctx context.Context, image string) error {
	cli, err := Connect(ctx, "")
	if err != nil {
		return fmt.Errorf("cannot ask the Docker engine: %w", err)
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		return fmt.Errorf("the Docker engine does not have it (build or pull it first): %w", err)
	}
	return nil
}

package docker

import (
	"context"
	"fmt"
	"maps"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"
)

// ensureNetworks creates the named networks that the engine lacks: bridge
// networks labeled LabelManaged and the runtime's extra labels (as compose
// creates a project's networks on up). Networks are shared by every host of
// a fleet on the engine and never removed by the runtime.
func (d *Docker) ensureNetworks(ctx context.Context, names []string) error {
	d.networks.Lock()
	defer d.networks.Unlock()
	for _, name := range names {
		_, err := d.cli.NetworkInspect(ctx, name, network.InspectOptions{})
		if err == nil {
			continue
		}
		if !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("network %s: %w", name, err)
		}
		labels := map[string]string{LabelManaged: "true"}
		maps.Copy(labels, d.scope.labels)
		_, err = d.cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Labels: labels})
		if err != nil && !cerrdefs.IsConflict(err) { // another runtime made it meanwhile
			return fmt.Errorf("create network %s: %w", name, err)
		}
		if err == nil {
			d.log.Info("docker runtime: created network", "network", name)
		}
	}
	return nil
}

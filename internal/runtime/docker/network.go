package docker

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
)

// ensureNetworks creates the named networks that the engine lacks: bridge
// networks labeled LabelManaged and the runtime's extra labels (as compose
// creates a project's networks on up). Networks are shared by every host of
// a fleet on the engine and never removed by the runtime.
//
// It returns the ID of the network to use for each name. Engines before API
// 1.44 check a new network's name for duplicates without a lock: two
// runtimes on one engine (the agents of a local fleet) that create a network
// at the same moment can both succeed, and from then on the engine calls the
// name "ambiguous" and refuses every container that names it. So a name is
// resolved to one network the same way by every runtime (pickNetwork: the
// oldest), containers are given its ID, and a runtime that made a losing
// duplicate removes it.
func (d *Docker) ensureNetworks(ctx context.Context, names []string) (map[string]string, error) {
	d.networks.Lock()
	defer d.networks.Unlock()
	ids := make(map[string]string, len(names))
	for _, name := range names {
		if predefined[name] {
			continue // the engine's own: one of each, used by name
		}
		found, err := d.networksNamed(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("network %s: %w", name, err)
		}
		made := ""
		if len(found) == 0 {
			labels := map[string]string{LabelManaged: "true"}
			maps.Copy(labels, d.scope.labels)
			resp, err := d.cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge", Labels: labels})
			if err != nil && !cerrdefs.IsConflict(err) { // conflict: another runtime made it meanwhile
				return nil, fmt.Errorf("create network %s: %w", name, err)
			}
			if err == nil {
				made = resp.ID
				d.log.Info("docker runtime: created network", "network", name, "id", short(made))
			}
			if found, err = d.networksNamed(ctx, name); err != nil {
				return nil, fmt.Errorf("network %s: %w", name, err)
			}
		}
		id, ok := pickNetwork(found)
		if !ok {
			return nil, fmt.Errorf("network %s: created, yet the engine does not list it", name)
		}
		if made != "" && made != id {
			// Another runtime's network of the same name is older: every
			// runtime uses that one, so this one would stay empty.
			if err := d.cli.NetworkRemove(ctx, made); err != nil {
				d.log.Warn("docker runtime: could not remove a duplicate network; it stays unused", "network", name, "id", short(made), "err", err)
			} else {
				d.log.Info("docker runtime: removed a duplicate network made at the same moment as another runtime's", "network", name, "id", short(made), "kept", short(id))
			}
		}
		ids[name] = id
	}
	return ids, nil
}

// predefined are the engine's own networks, which containers name as they are.
var predefined = map[string]bool{"bridge": true, "host": true, "none": true, "default": true}

// networksNamed lists the engine's networks whose name is exactly name (the
// engine's name filter also matches parts of names).
func (d *Docker) networksNamed(ctx context.Context, name string) ([]network.Summary, error) {
	all, err := d.cli.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("name", name))})
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(n network.Summary) bool { return n.Name != name }), nil
}

// pickNetwork is the one network of several with the same name that every
// runtime uses: the oldest (the engine's Created), ties broken by the
// lower ID. ok is false for none.
func pickNetwork(nets []network.Summary) (id string, ok bool) {
	if len(nets) == 0 {
		return "", false
	}
	best := slices.MinFunc(nets, func(a, b network.Summary) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return best.ID, true
}

// withNetworkIDs returns spec with its networks named by ID (ids, from
// ensureNetworks): a name two networks share is ambiguous to the engine. The
// endpoint settings (aliases) stay, with the network's ID set.
func withNetworkIDs(spec containerSpec, ids map[string]string) containerSpec {
	byID := func(name string) string {
		if id, ok := ids[name]; ok {
			return id
		}
		return name
	}
	if spec.Host != nil {
		h := *spec.Host
		h.NetworkMode = container.NetworkMode(byID(string(h.NetworkMode)))
		spec.Host = &h
	}
	if spec.Networking != nil {
		eps := make(map[string]*network.EndpointSettings, len(spec.Networking.EndpointsConfig))
		for name, ep := range spec.Networking.EndpointsConfig {
			id := byID(name)
			if id != name {
				// The engine names a container's networks by name and looks
				// them up again at every start, by this ID when it is set.
				c := *cmp.Or(ep, &network.EndpointSettings{})
				c.NetworkID = id
				ep = &c
			}
			eps[id] = ep
		}
		spec.Networking = &network.NetworkingConfig{EndpointsConfig: eps}
	}
	connect := make([]string, len(spec.Connect))
	for i, name := range spec.Connect {
		connect[i] = byID(name)
	}
	spec.Connect = connect
	return spec
}

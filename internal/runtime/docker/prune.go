package docker

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"

	"github.com/mythex/mythex/internal/runtime"
)

// Prune removes the runtime's containers that are not running (nor being
// restarted by Docker, nor stopping) and whose spec hash is not in keep; see
// runtime.Runtime.Prune. With Options.KeepVersions = n it also keeps each
// service's n most recently run such containers. It returns the IDs of the
// containers removed, sorted.
//
// Then, unless Options.KeepImages, it removes the image reference each
// removed container was created from (e.g. mythex/app:v1) when no container
// left on the engine — the runtime's or anyone's — uses that reference and it
// still names the image the container ran: the images of kept containers,
// among them the last known good version's, are never touched, and an image
// in use elsewhere is left (the engine refuses, and Prune carries on).
func (d *Docker) Prune(ctx context.Context, keep ...string) ([]string, error) {
	if d.isClosed() {
		return nil, runtime.ErrClosed
	}
	cs, err := d.inspectAll(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("docker runtime: prune: %w", err)
	}
	victims := pruneVictims(cs, keep, d.opts.KeepVersions, d.stopping)
	var pruned []string
	type imageRef struct{ ref, id string }
	var refs []imageRef
	for _, c := range victims {
		unlock, err := d.lockService(label(c.Config.Labels, LabelService))
		if err != nil {
			return pruned, err
		}
		// Look again under the service's lock: a Start may have restarted it.
		now, err := d.cli.ContainerInspect(ctx, c.ID)
		switch {
		case cerrdefs.IsNotFound(err):
			unlock()
			continue
		case err != nil:
			unlock()
			return pruned, fmt.Errorf("docker runtime: prune: %w", err)
		case active(&now) || d.stopping(c.ID):
			unlock()
			continue
		}
		err = d.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{RemoveVolumes: true})
		unlock()
		if err != nil && !cerrdefs.IsNotFound(err) {
			return pruned, fmt.Errorf("docker runtime: prune: remove container %s: %w", short(c.ID), err)
		}
		d.log.Info("docker runtime: removed container", "service", label(c.Config.Labels, LabelService), "version", label(c.Config.Labels, LabelVersion), "id", short(c.ID))
		pruned = append(pruned, c.ID)
		refs = append(refs, imageRef{ref: c.Config.Image, id: c.Image})
	}
	slices.Sort(pruned)
	if len(pruned) == 0 {
		return nil, nil
	}
	d.checks.forget(pruned...)
	if err := d.marks.drop(pruned...); err != nil {
		return pruned, fmt.Errorf("docker runtime: prune: %w", err)
	}
	if d.opts.KeepImages {
		return pruned, nil
	}
	all, err := d.cli.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		return pruned, fmt.Errorf("docker runtime: prune: list containers: %w", err)
	}
	inUse := map[string]bool{}
	for _, c := range all {
		inUse[c.Image] = true
		inUse[c.ImageID] = true
	}
	done := map[string]bool{}
	for _, r := range refs {
		if r.ref == "" || inUse[r.ref] || done[r.ref] {
			continue
		}
		done[r.ref] = true
		img, err := d.cli.ImageInspect(ctx, r.ref)
		if err != nil || img.ID != r.id {
			continue // gone, or the reference now names another image
		}
		if _, err := d.cli.ImageRemove(ctx, r.ref, image.RemoveOptions{PruneChildren: true}); err != nil {
			d.log.Info("docker runtime: image kept", "image", r.ref, "reason", err)
			continue
		}
		d.log.Info("docker runtime: removed image", "image", r.ref)
	}
	return pruned, nil
}

// pruneVictims decides which containers Prune removes: those not active, not
// stopping, whose spec hash is not in keep, except each service's
// keepVersions most recently run.
func pruneVictims(cs []container.InspectResponse, keep []string, keepVersions int, stopping func(id string) bool) []container.InspectResponse {
	byService := map[string][]container.InspectResponse{}
	for _, c := range cs {
		if active(&c) || stopping(c.ID) || slices.Contains(keep, label(c.Config.Labels, LabelSpecHash)) {
			continue
		}
		name := label(c.Config.Labels, LabelService)
		byService[name] = append(byService[name], c)
	}
	var out []container.InspectResponse
	for _, name := range slices.Sorted(maps.Keys(byService)) {
		list := byService[name]
		slices.SortFunc(list, func(a, b container.InspectResponse) int {
			return cmp.Or(lastRun(b).Compare(lastRun(a)), cmp.Compare(a.ID, b.ID)) // newest first
		})
		if keepVersions < len(list) {
			out = append(out, list[max(keepVersions, 0):]...)
		}
	}
	return out
}

// lastRun is when the container last ran: its last start or exit, or its
// creation when it never started.
func lastRun(c container.InspectResponse) time.Time {
	t := dockerTime(c.Created)
	for _, s := range []string{c.State.StartedAt, c.State.FinishedAt} {
		if ts := dockerTime(s); ts.After(t) {
			t = ts
		}
	}
	return t
}

package docker

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

func TestPruneVictims(t *testing.T) {
	c := func(id, service, spec string, status container.ContainerState, finishedAt string) container.InspectResponse {
		return container.InspectResponse{
			ContainerJSONBase: &container.ContainerJSONBase{ID: id, Created: "2025-01-01T00:00:00Z", State: &container.State{Status: status, StartedAt: "2025-01-01T00:00:01Z", FinishedAt: finishedAt}},
			Config:            &container.Config{Labels: map[string]string{LabelService: service, LabelSpecHash: spec}},
		}
	}
	all := []container.InspectResponse{
		c("api1", "api", "s1", container.StateExited, "2025-01-01T01:00:00Z"),
		c("api2", "api", "s2", container.StateExited, "2025-01-01T02:00:00Z"),
		c("api3", "api", "s3", container.StateExited, "2025-01-01T03:00:00Z"),
		c("api4", "api", "s4", container.StateRunning, never),
		c("gw1", "gateway", "g1", container.StateExited, "2025-01-01T01:00:00Z"),
		c("gw2", "gateway", "g2", container.StateRestarting, "2025-01-01T02:00:00Z"),
		c("gw3", "gateway", "g3", container.StateCreated, never),
	}
	// api1 and gw1 were made by an older mythex: the same service and spec
	// under the legacy keys.
	all[0].Config.Labels, all[4].Config.Labels = legacy(all[0].Config.Labels), legacy(all[4].Config.Labels)
	none := func(string) bool { return false }
	cases := []struct {
		name     string
		keep     []string
		versions int
		stopping func(string) bool
		want     []string
	}{
		{"everything stopped and not kept goes", nil, 0, none, []string{"api1", "api2", "api3", "gw1", "gw3"}},
		{"kept spec hashes stay (last known good)", []string{"s1", "g1"}, 0, none, []string{"api2", "api3", "gw3"}},
		{"the newest n of each service stay (by last run)", nil, 1, none, []string{"api1", "api2", "gw3"}},
		{"kept and newest n together", []string{"s1"}, 1, none, []string{"api2", "gw3"}},
		{"a stopping container stays", nil, 0, func(id string) bool { return id == "api3" }, []string{"api1", "api2", "gw1", "gw3"}},
		{"more versions than there are", nil, 10, none, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range pruneVictims(all, tc.keep, tc.versions, tc.stopping) {
				got = append(got, v.ID)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("victims = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDocker_Prune(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.newDocker(t, Options{})
	ctx := context.Background()
	// Each version runs from its own image reference, tags of the test image.
	versions := []string{"v1", "v2", "v3"}
	svcs := map[string]definition.Service{}
	base, _ := e.service(t, "api", "v1", map[string]string{"MYTHEX_APP_DRAIN_SERVE_PERIOD": "0s"})
	for _, v := range versions {
		ref := "mythex-test/prune-" + e.id + ":" + v
		if err := e.cli.ImageTag(ctx, e.image, ref); err != nil {
			t.Fatal(err)
		}
		s := base
		s.Version, s.Image = v, ref
		s.Environment = maps.Clone(base.Environment)
		s.Environment[definition.EnvVersion], s.Environment["MYTHEX_APP_VERSION"] = v, v
		svcs[v] = s
	}
	t.Cleanup(func() {
		for _, v := range versions {
			_, _ = e.cli.ImageRemove(context.Background(), "mythex-test/prune-"+e.id+":"+v, imageRemoveUntag)
		}
	})
	ids := map[string]string{}
	for _, v := range versions {
		if err := d.Start(ctx, svcs[v]); err != nil {
			t.Fatalf("Start %s: %v", v, err)
		}
		ids[v] = waitStatus(t, d, "api", "", v+" running", func(s runtime.ServiceStatus) bool { return s.Running() && s.Version == v }).ID
		if v != "v3" {
			if _, err := d.Stop(ctx, "api", 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	// v1 is the last known good, v3 runs: only v2 goes, with its image.
	pruned, err := d.Prune(ctx, svcs["v1"].SpecHash())
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if !slices.Equal(pruned, []string{ids["v2"]}) {
		t.Errorf("pruned %v, want only v2's %s", pruned, short(ids["v2"]))
	}
	sts, err := d.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, s := range sts {
		left = append(left, s.Version)
	}
	if !slices.Equal(left, []string{"v1", "v3"}) {
		t.Errorf("left %v, want v1 (last good, stopped) and v3 (running)", left)
	}
	for v, want := range map[string]bool{"v1": true, "v2": false, "v3": true} {
		_, err := e.cli.ImageInspect(ctx, svcs[v].Image)
		if (err == nil) != want {
			t.Errorf("image %s present = %v, want %v", svcs[v].Image, err == nil, want)
		}
	}
	// The last known good still comes back, as the same container.
	if _, err := d.Stop(ctx, "api", 0); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx, svcs["v1"]); err != nil {
		t.Fatalf("Start the last known good: %v", err)
	}
	if s := waitStatus(t, d, "api", "", "v1 running", func(s runtime.ServiceStatus) bool { return s.Running() }); s.ID != ids["v1"] {
		t.Errorf("runs %s, want v1's own container %s", short(s.ID), short(ids["v1"]))
	}
}

package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/mythex/mythex/internal/runtime"
)

func TestPickNetwork(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		nets   []network.Summary
		want   string
		wantOK bool
	}{
		{"none", nil, "", false},
		{"one", []network.Summary{{ID: "b", Created: t0}}, "b", true},
		{"the oldest of two", []network.Summary{{ID: "a", Created: t0.Add(time.Millisecond)}, {ID: "b", Created: t0}}, "b", true},
		{"same moment: the lower ID", []network.Summary{{ID: "c", Created: t0}, {ID: "a", Created: t0}, {ID: "b", Created: t0}}, "a", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := pickNetwork(tt.nets)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("pickNetwork = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestWithNetworkIDs(t *testing.T) {
	alias := &network.EndpointSettings{Aliases: []string{"api"}}
	spec := containerSpec{
		Host:       &container.HostConfig{NetworkMode: "front"},
		Networking: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{"front": alias}},
		Connect:    []string{"back", "unknown"},
	}
	got := withNetworkIDs(spec, map[string]string{"front": "id-front", "back": "id-back"})
	if got.Host.NetworkMode != "id-front" {
		t.Errorf("network mode = %q, want id-front", got.Host.NetworkMode)
	}
	if ep := got.Networking.EndpointsConfig["id-front"]; ep == nil || ep.NetworkID != "id-front" || ep.Aliases[0] != "api" || len(got.Networking.EndpointsConfig) != 1 {
		t.Errorf("endpoints = %v, want the alias settings with the network ID under id-front only", got.Networking.EndpointsConfig)
	}
	if fmt.Sprint(got.Connect) != "[id-back unknown]" {
		t.Errorf("connect = %v, want [id-back unknown] (a name without an ID stays)", got.Connect)
	}
	if spec.Host.NetworkMode != "front" || spec.Networking.EndpointsConfig["front"] != alias || alias.NetworkID != "" || spec.Connect[0] != "back" {
		t.Errorf("the given spec changed: %+v %v %v", spec.Host, spec.Networking.EndpointsConfig, spec.Connect)
	}
}

// createNetworkUnchecked creates a bridge network named name with labels the
// way an engine before API 1.44 lets two racing creators do: without the
// duplicate check the client package always asks for. It returns the new
// network's ID, or skips t when the engine refuses a duplicate name itself.
func createNetworkUnchecked(t *testing.T, e *testEnv, name string, labels map[string]string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"Name": name, "Driver": "bridge", "Labels": labels, "CheckDuplicate": false})
	u := fmt.Sprintf("http://docker/v%s/networks/create", e.cli.ClientVersion())
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.cli.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusConflict {
		t.Skipf("engine API %s refuses a second network named %s itself: no duplicates to resolve", e.cli.ClientVersion(), name)
	}
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create network %s: %s %s", name, resp.Status, b)
	}
	var out network.CreateResponse
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out.ID
}

// TestDocker_DuplicateNetworkNamesAreResolved: two networks of one name (two
// agents on one engine that created it at once, seen in a full test run) made
// every start fail with "network … is ambiguous". The runtime now uses the
// oldest by ID, as every runtime on the engine does.
func TestDocker_DuplicateNetworkNamesAreResolved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	labels := map[string]string{LabelManaged: "true"}
	for k, v := range e.labels() {
		labels[k] = v
	}
	first := createNetworkUnchecked(t, e, e.network, labels)
	second := createNetworkUnchecked(t, e, e.network, labels)
	ctx := context.Background()
	nets, err := (&Docker{cli: e.cli}).networksNamed(ctx, e.network)
	if err != nil || len(nets) != 2 {
		t.Fatalf("networks named %s = %v, %v; want the two made", e.network, nets, err)
	}
	want, _ := pickNetwork(nets)
	if want != first && want != second {
		t.Fatalf("picked %s, not one of %s, %s", want, first, second)
	}
	d := e.newDocker(t, Options{})
	svc, _ := e.service(t, "api", "v1", nil)
	if err := d.Start(ctx, svc); err != nil {
		t.Fatalf("start with two networks named %s: %v", e.network, err)
	}
	s := waitStatus(t, d, "api", "", "running", func(s runtime.ServiceStatus) bool { return s.Running() })
	c, err := e.cli.ContainerInspect(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var joined []string
	for _, ep := range c.NetworkSettings.Networks {
		joined = append(joined, ep.NetworkID)
	}
	if len(joined) != 1 || joined[0] != want {
		t.Errorf("container joined %v, want only %s (the oldest of %s, %s)", joined, want, first, second)
	}
}

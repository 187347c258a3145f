package docker

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/fleet"
)

// TestExampleDocker resolves examples/docker for every host and maps every
// service to its container: the example the README walks through is one
// the Docker runtime runs.
func TestExampleDocker(t *testing.T) {
	t.Parallel()
	fl, err := fleet.Load("../../../examples/docker/mythex.yml")
	if err != nil {
		t.Fatal(err)
	}
	published := map[int]string{}
	for _, h := range fl.Hosts {
		d, err := definition.ForHost(context.Background(), fl, h.Name, "v1")
		if err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		if got := d.Names(); !slices.Equal(got, []string{"api", "gateway", "orchestrator", "publish-worker"}) {
			t.Errorf("%s services = %v", h.Name, got)
		}
		for _, svc := range d.Services {
			spec, err := buildSpec(svc, scope{host: h.Name}, MinAPIVersion)
			if err != nil {
				t.Errorf("%s/%s: %v", h.Name, svc.Name, err)
				continue
			}
			if spec.Config.Image != "mythex/app:v1" || spec.Host.NetworkMode != "mythex-docker_default" {
				t.Errorf("%s/%s: image %q network %q", h.Name, svc.Name, spec.Config.Image, spec.Host.NetworkMode)
			}
			if hc := spec.Config.Healthcheck; len(hc.Test) != 5 || hc.Test[0] != "CMD" || hc.Test[4] != "http://127.0.0.1:8081/healthz" {
				t.Errorf("%s/%s: healthcheck %v", h.Name, svc.Name, hc.Test)
			}
			if len(svc.Ports) != 1 || svc.Ports[0].HostIP != "127.0.0.1" || svc.Ports[0].Target != SampleAppPort {
				t.Fatalf("%s/%s: ports %+v", h.Name, svc.Name, svc.Ports)
			}
			p := svc.Ports[0].Published
			if other, dup := published[p]; dup {
				t.Errorf("%s/%s publishes port %d, as %s does: one engine, one port", h.Name, svc.Name, p, other)
			}
			published[p] = h.Name + "/" + svc.Name
			if svc.Name == "gateway" && h.Target != "127.0.0.1:"+strconv.Itoa(p) {
				t.Errorf("%s gateway on %d, want the load balancer target %s", h.Name, p, h.Target)
			}
		}
	}
	if len(published) != 12 {
		t.Errorf("%d distinct ports, want 12 (3 hosts × 4 services)", len(published))
	}
}

package definition

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// TestForHost_LocalExample loads the first real definition, examples/local:
// three hosts on one machine, four services each, every port distinct, the
// gateway on the host's load balancer target, one compose source for all.
func TestForHost_LocalExample(t *testing.T) {
	fl, err := fleet.Load("../../examples/local/mythex.yml")
	if err != nil {
		t.Fatalf("fleet.Load: %v", err)
	}
	wantServices := []string{"api", "gateway", "orchestrator", "publish-worker"}
	ports := map[int]string{}
	hashes := map[string]string{}
	var source string
	for _, h := range fl.Hosts {
		d, err := ForHost(context.Background(), fl, h.Name, "v2")
		if err != nil {
			t.Fatalf("ForHost(%s): %v", h.Name, err)
		}
		if got := strings.Join(d.Names(), ","); got != strings.Join(wantServices, ",") {
			t.Errorf("%s: services = %s, want %v", h.Name, got, wantServices)
		}
		if source == "" {
			source = d.Source.SHA256
		} else if d.Source.SHA256 != source {
			t.Errorf("%s: source %s differs from another host's %s: not one definition", h.Name, d.Source.SHA256, source)
		}
		if other, dup := hashes[d.Hash]; dup {
			t.Errorf("%s and %s have the same hash; per-host values must differ", h.Name, other)
		}
		hashes[d.Hash] = h.Name
		_, targetPort, _ := net.SplitHostPort(h.Target)
		for _, s := range d.Services {
			where := fmt.Sprintf("%s/%s", h.Name, s.Name)
			if s.Process == nil || s.Process.Port == 0 || s.Healthcheck == nil {
				t.Fatalf("%s: no process port or healthcheck: %+v", where, s)
			}
			if prev, dup := ports[s.Process.Port]; dup {
				t.Errorf("%s: port %d also used by %s", where, s.Process.Port, prev)
			}
			ports[s.Process.Port] = where
			if want := fmt.Sprintf("127.0.0.1:%d", s.Process.Port); s.Environment["MYTHEX_APP_LISTEN"] != want {
				t.Errorf("%s: listens on %s, health-checked on %s", where, s.Environment["MYTHEX_APP_LISTEN"], want)
			}
			if s.Name == "gateway" && fmt.Sprint(s.Process.Port) != targetPort {
				t.Errorf("%s: gateway port %d is not the LB target %s", where, s.Process.Port, h.Target)
			}
			for k, want := range map[string]string{
				"MYTHEX_APP_SERVICE": s.Name, "MYTHEX_APP_VERSION": "v2", "MYTHEX_APP_HOST_NAME": h.Name,
				EnvVersion: "v2", EnvHost: h.Name,
			} {
				if s.Environment[k] != want {
					t.Errorf("%s: %s = %q, want %q", where, k, s.Environment[k], want)
				}
			}
			if s.Image != "mythex/app:v2" {
				t.Errorf("%s: image = %q", where, s.Image)
			}
			// The drain (D+S) must fit the stop grace period (the grace relation of docs/check.md).
			if d, st := s.Environment["MYTHEX_APP_DRAIN_SERVE_PERIOD"], s.Environment["MYTHEX_APP_SHUTDOWN_TIMEOUT"]; d != "15s" || st != "10s" || s.StopGracePeriod.Seconds() < 25 {
				t.Errorf("%s: drain %s + shutdown %s vs grace %v", where, d, st, s.StopGracePeriod)
			}
			if filepath.Base(s.Process.Executable) != "app" || !filepath.IsAbs(s.Process.Executable) {
				t.Errorf("%s: executable = %q", where, s.Process.Executable)
			}
		}
	}
	if len(ports) != 12 {
		t.Errorf("distinct ports = %d, want 12", len(ports))
	}
}

func TestForHost_Errors(t *testing.T) {
	fl, err := fleet.Load("../../examples/local/mythex.yml")
	if err != nil {
		t.Fatal(err)
	}
	noCompose := *fl
	noCompose.Deploy.Compose = ""
	missing := *fl
	missing.Deploy.Compose = "nope.yaml"
	cases := []struct {
		name    string
		fl      *fleet.Loaded
		host    string
		wantErr error
		wantMsg string
	}{
		{"unknown host", fl, "web-9", ErrInvalid, `no host named "web-9"`},
		{"no compose", &noCompose, "web-1", ErrInvalid, "deploy.compose: is not set"},
		{"compose missing", &missing, "web-1", os.ErrNotExist, "nope.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ForHost(context.Background(), tc.fl, tc.host, "v1")
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %v, want %v containing %q", err, tc.wantErr, tc.wantMsg)
			}
		})
	}
}

// TestForHost_HealthcheckPaceFromFleet: the example's compose health checks
// take their interval and timeout from mythex.yml's load_balancer.health_check,
// so shortening the fleet's timings is one edit, and `mythex check` proves the
// numbers the services actually run with.
func TestForHost_HealthcheckPaceFromFleet(t *testing.T) {
	for _, example := range []string{"../../examples/local/mythex.yml"} {
		fl, err := fleet.Load(example)
		if err != nil {
			t.Fatal(err)
		}
		fl.LoadBalancer.HealthCheck.Interval = 700 * time.Millisecond
		fl.LoadBalancer.HealthCheck.Timeout = 300 * time.Millisecond
		d, err := ForHost(context.Background(), fl, fl.Hosts[0].Name, "v1")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range d.Services {
			if hc := s.Healthcheck; hc == nil || hc.Interval != 700*time.Millisecond || hc.Timeout != 300*time.Millisecond {
				t.Errorf("%s %s: healthcheck %+v; want interval 700ms and timeout 300ms from load_balancer.health_check", example, s.Name, hc)
			}
		}
	}
}

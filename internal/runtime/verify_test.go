package runtime

import (
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/definition"
)

func verifyDef(t *testing.T, version string) *definition.Definition {
	t.Helper()
	svc := func(name string) definition.Service {
		return definition.Service{
			Name: name, Version: version, Image: "app:" + version,
			Environment:     map[string]string{definition.EnvVersion: version, definition.EnvService: name},
			StopGracePeriod: time.Second, Restart: definition.RestartPolicy{Policy: definition.RestartNo},
		}
	}
	d := &definition.Definition{Version: version, Services: []definition.Service{svc("api"), svc("gateway")}}
	if err := d.Seal(); err != nil {
		t.Fatal(err)
	}
	return d
}

func statusOf(svc definition.Service, state State, health HealthStatus, started time.Time) ServiceStatus {
	return ServiceStatus{
		Name: svc.Name, ID: svc.Name + "-" + svc.SpecHash()[:12], SpecHash: svc.SpecHash(), Version: svc.Version,
		State: state, StartedAt: started, Health: Health{Status: health, Log: []CheckResult{{ExitCode: 503, Output: "draining"}}},
	}
}

func TestVerify(t *testing.T) {
	v1, v2 := verifyDef(t, "v1"), verifyDef(t, "v2")
	t0 := time.Unix(1000, 0)
	api1, gw1 := v1.Services[0], v1.Services[1]
	api2, gw2 := v2.Services[0], v2.Services[1]
	cases := []struct {
		name     string
		statuses []ServiceStatus
		wantOK   bool
		wantAPI  string // "" when api must pass
	}{
		{"all healthy", []ServiceStatus{statusOf(api2, StateRunning, HealthHealthy, t0), statusOf(gw2, StateRunning, HealthHealthy, t0)}, true, ""},
		{"no healthcheck counts as up", []ServiceStatus{statusOf(api2, StateRunning, HealthNone, t0), statusOf(gw2, StateRunning, HealthHealthy, t0)}, true, ""},
		{"missing service", []ServiceStatus{statusOf(gw2, StateRunning, HealthHealthy, t0)}, false, "no instance"},
		{"old version runs", []ServiceStatus{statusOf(api1, StateRunning, HealthHealthy, t0), statusOf(gw2, StateRunning, HealthHealthy, t0)}, false, "version v1"},
		{"new version exited, old stopped", []ServiceStatus{statusOf(api1, StateStopped, HealthNone, t0), statusOf(api2, StateExited, HealthNone, t0.Add(time.Second)), statusOf(gw2, StateRunning, HealthHealthy, t0)}, false, "exited with code 0"},
		{"restarting under its restart policy", []ServiceStatus{statusOf(api2, StateRestarting, HealthNone, t0), statusOf(gw2, StateRunning, HealthHealthy, t0)}, false, "restart policy is restarting it"},
		{"starting", []ServiceStatus{statusOf(api2, StateRunning, HealthStarting, t0), statusOf(gw2, StateRunning, HealthHealthy, t0)}, false, "starting: no health check has passed yet: last check exit/status 503 \"draining\""},
		{"unhealthy", []ServiceStatus{statusOf(api2, StateRunning, HealthUnhealthy, t0), statusOf(gw2, StateRunning, HealthHealthy, t0)}, false, "unhealthy: last check exit/status 503"},
		{"gateway missing fails the whole", []ServiceStatus{statusOf(api2, StateRunning, HealthHealthy, t0), statusOf(gw1, StateStopped, HealthNone, t0)}, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checks, ok := Verify(v2, tc.statuses)
			if ok != tc.wantOK {
				t.Errorf("ok = %v, want %v (%+v)", ok, tc.wantOK, checks)
			}
			if len(checks) != 2 || checks[0].Name != "api" {
				t.Fatalf("checks = %+v, want one per service in order", checks)
			}
			api := checks[0]
			if tc.wantAPI == "" && !api.OK {
				t.Errorf("api failed: %s", api.Reason)
			}
			if tc.wantAPI != "" && (api.OK || !strings.Contains(api.Reason, tc.wantAPI)) {
				t.Errorf("api = %+v, want a failure containing %q", api, tc.wantAPI)
			}
		})
	}
}

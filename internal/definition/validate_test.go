package definition

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

func TestDefinition_Validate(t *testing.T) {
	cases := []struct {
		name      string
		change    func(d *Definition)
		wantSvc   string
		wantField string
		wantMsg   string
	}{
		{"bad version", func(d *Definition) { d.Version = "v 1" }, "", "version", "not a valid version"},
		{"no services", func(d *Definition) { d.Services = nil }, "", "services", "no services"},
		{"duplicate name", func(d *Definition) { d.Services[1].Name = "api"; d.Services[1].Environment[EnvService] = "api" }, "api", "", "defined twice"},
		{"bad name", func(d *Definition) { d.Services[0].Name = "../x" }, "", "services", "not valid"},
		{"version mismatch", func(d *Definition) { d.Services[0].Version = "v0" }, "api", "version", "differs"},
		{"nothing to run", func(d *Definition) { d.Services[0].Image = ""; d.Services[0].Process = nil }, "api", "image", "x-mythex.executable"},
		{"zero grace", func(d *Definition) { d.Services[0].StopGracePeriod = 0 }, "api", "stop_grace_period", "more than 0"},
		{"restart policy", func(d *Definition) { d.Services[0].Restart = RestartPolicy{Policy: "sometimes"} }, "api", "restart", "unknown restart policy"},
		{"retries without on-failure", func(d *Definition) { d.Services[0].Restart = RestartPolicy{Policy: RestartAlways, MaxRetries: 2} }, "api", "restart", "only to on-failure"},
		{"reserved env missing", func(d *Definition) { delete(d.Services[0].Environment, EnvVersion) }, "api", "environment.MYTHEX_VERSION", "mythex sets"},
		{"host env without host", func(d *Definition) { d.Services[0].Environment[EnvHost] = "web-1" }, "api", "environment.MYTHEX_HOST", "no host"},
		{"bad env key", func(d *Definition) { d.Services[0].Environment["A=B"] = "x" }, "api", "environment", "not valid"},
		{"relative executable", func(d *Definition) { d.Services[0].Process.Executable = "bin/app" }, "api", "x-mythex.executable", "absolute"},
		{"port out of range", func(d *Definition) { d.Services[0].Process.Port = 70000 }, "api", "x-mythex.port", "1–65535"},
		{"health path without port", func(d *Definition) { d.Services[0].Process.Port = 0 }, "api", "x-mythex.port", "required with x-mythex.health_path"},
		{"health path relative", func(d *Definition) { d.Services[0].Process.HealthPath = "healthz" }, "api", "x-mythex.health_path", "absolute HTTP path"},
		{"healthcheck with nothing to run", func(d *Definition) { d.Services[0].Process.HealthPath = "" }, "api", "healthcheck.test", "no x-mythex.health_path"},
		{"zero interval", func(d *Definition) { d.Services[0].Healthcheck.Interval = 0 }, "api", "healthcheck.interval", "more than 0"},
		{"zero retries", func(d *Definition) { d.Services[0].Healthcheck.Retries = 0 }, "api", "healthcheck.retries", "at least 1"},
		{"NUL in argv", func(d *Definition) { d.Services[0].Command = []string{"a\x00b"} }, "api", "command[0]", "NUL"},
		{"published port out of range", func(d *Definition) {
			d.Services[0].Ports = []Port{{HostIP: "127.0.0.1", Published: 0, Target: 80, Protocol: "tcp"}}
		}, "api", "ports[0].published", "1–65535"},
		{"target port out of range", func(d *Definition) {
			d.Services[0].Ports = []Port{{HostIP: "127.0.0.1", Published: 80, Target: 70000, Protocol: "tcp"}}
		}, "api", "ports[0].target", "1–65535"},
		{"port host_ip empty", func(d *Definition) { d.Services[0].Ports = []Port{{Published: 80, Target: 80, Protocol: "tcp"}} }, "api", "ports[0].host_ip", "not an IP address"},
		{"port protocol", func(d *Definition) {
			d.Services[0].Ports = []Port{{HostIP: "127.0.0.1", Published: 80, Target: 80, Protocol: "sctp"}}
		}, "api", "ports[0].protocol", "tcp or udp"},
		{"bad network name", func(d *Definition) { d.Services[0].Networks = []string{"a b"} }, "api", "networks[0]", "not valid"},
		{"networks unsorted", func(d *Definition) { d.Services[0].Networks = []string{"b", "a"} }, "api", "networks", "sorted and unique"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := testDefinition(t, "v1")
			tc.change(d)
			err := d.Validate()
			if !errors.Is(err, ErrInvalid) || !errors.Is(err, fleet.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid and fleet.ErrInvalid", err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err %T is not a *FieldError", err)
			}
			if fe.Service != tc.wantSvc || fe.Field != tc.wantField || !strings.Contains(fe.Msg, tc.wantMsg) {
				t.Errorf("got %q (service %q field %q), want service %q field %q containing %q", err, fe.Service, fe.Field, tc.wantSvc, tc.wantField, tc.wantMsg)
			}
		})
	}
}

func TestDefinition_ValidateGood(t *testing.T) {
	d := testDefinition(t, "v1")
	d.Services[0].Healthcheck.StartPeriod = 0
	d.Services[1].Healthcheck = nil
	d.Services[1].StopGracePeriod = time.Millisecond
	if err := d.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestFieldError_Error(t *testing.T) {
	cases := []struct {
		name string
		err  FieldError
		want string
	}{
		{"service field", FieldError{File: "/x/compose.yaml", Service: "api", Field: "x-mythex.port", Msg: "bad"}, "/x/compose.yaml: services.api.x-mythex.port: bad"},
		{"service only", FieldError{File: "c.yaml", Service: "api", Msg: "twice"}, "c.yaml: services.api: twice"},
		{"no file", FieldError{Field: "version", Msg: "bad"}, "definition: version: bad"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestService_Validate(t *testing.T) {
	good := testDefinition(t, "v1").Services[0]
	if err := good.Validate(); err != nil {
		t.Errorf("Validate good: %v", err)
	}
	hosted := good
	hosted.Environment = map[string]string{EnvVersion: "v1", EnvService: "api", EnvHost: "web-1"}
	if err := hosted.Validate(); err != nil {
		t.Errorf("Validate with MYTHEX_HOST: %v", err)
	}
	bad := good
	bad.StopGracePeriod = 0
	var fe *FieldError
	if err := bad.Validate(); !errors.As(err, &fe) || fe.Field != "stop_grace_period" {
		t.Errorf("Validate bad = %v, want stop_grace_period", err)
	}
}

func TestDefinition_SpecHashes(t *testing.T) {
	d := testDefinition(t, "v1")
	got := d.SpecHashes()
	if len(got) != 2 || got[0] != d.Services[0].SpecHash() || got[1] != d.Services[1].SpecHash() || got[0] == got[1] {
		t.Errorf("SpecHashes = %v", got)
	}
}

package docker

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-connections/nat"

	"github.com/mythex/mythex/internal/definition"
)

// baseService is a valid service with everything the mapping reads.
func baseService() definition.Service {
	return definition.Service{
		Name:            "api",
		Version:         "v2",
		Image:           "mythex/app:v2",
		Command:         []string{"--latency", "5ms"},
		Environment:     map[string]string{definition.EnvVersion: "v2", definition.EnvService: "api", definition.EnvHost: "web-1", "B": "2", "A": "1"},
		Labels:          map[string]string{"mythex.role": "backend"},
		StopGracePeriod: 30 * time.Second,
		Restart:         definition.RestartPolicy{Policy: definition.RestartOnFailure, MaxRetries: 3},
		Healthcheck: &definition.Healthcheck{
			Test: []string{"/mythex", "sample-app", "check", "http://127.0.0.1:8081/healthz"}, Interval: 5 * time.Second,
			Timeout: 2 * time.Second, Retries: 3, StartPeriod: 10 * time.Second, StartInterval: time.Second,
		},
		Ports:    []definition.Port{{HostIP: "127.0.0.1", Published: 9111, Target: 8081, Protocol: "tcp"}},
		Networks: []string{"mythex-local_default"},
	}
}

func TestBuildSpec(t *testing.T) {
	sc := scope{host: "web-1", labels: map[string]string{"team": "core"}}
	cases := []struct {
		name   string
		change func(*definition.Service)
		api    string
		check  func(t *testing.T, s containerSpec)
	}{
		{"name ties host, service and spec", nil, "1.41", func(t *testing.T, s containerSpec) {
			svc := baseService()
			if want := "mythex-web-1-api-" + svc.SpecHash()[:12]; s.Name != want {
				t.Errorf("name = %q, want %q", s.Name, want)
			}
		}},
		{"labels: compose, scope and the runtime's", nil, "1.41", func(t *testing.T, s containerSpec) {
			svc := baseService()
			want := map[string]string{
				"mythex.role": "backend", "team": "core", LabelManaged: "true", LabelHost: "web-1", LabelService: "api",
				LabelVersion: "v2", LabelSpecHash: svc.SpecHash(), LabelStopGracePeriod: "30s",
			}
			if len(s.Config.Labels) != len(want) {
				t.Errorf("labels = %v, want %v", s.Config.Labels, want)
			}
			for k, v := range want {
				if s.Config.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, s.Config.Labels[k], v)
				}
			}
		}},
		{"environment exactly, sorted", nil, "1.41", func(t *testing.T, s containerSpec) {
			want := []string{"A=1", "B=2", "MYTHEX_HOST=web-1", "MYTHEX_SERVICE=api", "MYTHEX_VERSION=v2"}
			if !slices.Equal(s.Config.Env, want) {
				t.Errorf("env = %v, want %v", s.Config.Env, want)
			}
		}},
		{"image and argv; no entrypoint keeps the image's", nil, "1.41", func(t *testing.T, s containerSpec) {
			if s.Config.Image != "mythex/app:v2" || !slices.Equal(s.Config.Cmd, []string{"--latency", "5ms"}) || s.Config.Entrypoint != nil {
				t.Errorf("image %q cmd %v entrypoint %v", s.Config.Image, s.Config.Cmd, s.Config.Entrypoint)
			}
		}},
		{"StopTimeout is the grace", nil, "1.41", func(t *testing.T, s containerSpec) {
			if s.Config.StopTimeout == nil || *s.Config.StopTimeout != 30 {
				t.Errorf("stop timeout = %v, want 30", s.Config.StopTimeout)
			}
		}},
		{"StopTimeout rounds a fractional grace up", func(s *definition.Service) { s.StopGracePeriod = 1500 * time.Millisecond }, "1.41", func(t *testing.T, s containerSpec) {
			if *s.Config.StopTimeout != 2 || s.Config.Labels[LabelStopGracePeriod] != "1.5s" {
				t.Errorf("stop timeout = %d label %q, want 2 and the exact 1.5s", *s.Config.StopTimeout, s.Config.Labels[LabelStopGracePeriod])
			}
		}},
		{"healthcheck exec form without start_interval before API 1.44", nil, "1.41", func(t *testing.T, s containerSpec) {
			h := s.Config.Healthcheck
			if !slices.Equal(h.Test, []string{"CMD", "/mythex", "sample-app", "check", "http://127.0.0.1:8081/healthz"}) ||
				h.Interval != 5*time.Second || h.Timeout != 2*time.Second || h.Retries != 3 || h.StartPeriod != 10*time.Second || h.StartInterval != 0 {
				t.Errorf("healthcheck = %+v", h)
			}
		}},
		{"start_interval from API 1.44", nil, "1.47", func(t *testing.T, s containerSpec) {
			if s.Config.Healthcheck.StartInterval != time.Second {
				t.Errorf("start interval = %v, want 1s", s.Config.Healthcheck.StartInterval)
			}
		}},
		{"no healthcheck disables the image's", func(s *definition.Service) { s.Healthcheck = nil }, "1.41", func(t *testing.T, s containerSpec) {
			if !slices.Equal(s.Config.Healthcheck.Test, []string{"NONE"}) {
				t.Errorf("healthcheck = %+v, want NONE", s.Config.Healthcheck)
			}
		}},
		{"ports published on host_ip and exposed", nil, "1.41", func(t *testing.T, s containerSpec) {
			p := nat.Port("8081/tcp")
			if _, ok := s.Config.ExposedPorts[p]; !ok {
				t.Errorf("exposed = %v", s.Config.ExposedPorts)
			}
			if b := s.Host.PortBindings[p]; len(b) != 1 || b[0] != (nat.PortBinding{HostIP: "127.0.0.1", HostPort: "9111"}) {
				t.Errorf("bindings = %v", s.Host.PortBindings)
			}
		}},
		{"one container port on two host addresses", func(s *definition.Service) {
			s.Ports = append(s.Ports, definition.Port{HostIP: "10.0.0.1", Published: 9111, Target: 8081, Protocol: "tcp"})
		}, "1.41", func(t *testing.T, s containerSpec) {
			if b := s.Host.PortBindings["8081/tcp"]; len(b) != 2 || b[1].HostIP != "10.0.0.1" {
				t.Errorf("bindings = %v", s.Host.PortBindings)
			}
		}},
		{"no ports, nothing published", func(s *definition.Service) { s.Ports = nil }, "1.41", func(t *testing.T, s containerSpec) {
			if s.Config.ExposedPorts != nil || s.Host.PortBindings != nil {
				t.Errorf("exposed %v bindings %v", s.Config.ExposedPorts, s.Host.PortBindings)
			}
		}},
		{"restart policy handed to Docker", nil, "1.41", func(t *testing.T, s containerSpec) {
			if s.Host.RestartPolicy != (container.RestartPolicy{Name: container.RestartPolicyOnFailure, MaximumRetryCount: 3}) {
				t.Errorf("restart = %+v", s.Host.RestartPolicy)
			}
		}},
		{"one network at create with the service as alias", nil, "1.41", func(t *testing.T, s containerSpec) {
			ep := s.Networking.EndpointsConfig["mythex-local_default"]
			if s.Host.NetworkMode != "mythex-local_default" || ep == nil || !slices.Equal(ep.Aliases, []string{"api"}) || len(s.Connect) != 0 {
				t.Errorf("network mode %q endpoints %v connect %v", s.Host.NetworkMode, s.Networking.EndpointsConfig, s.Connect)
			}
		}},
		{"further networks joined after create", func(s *definition.Service) { s.Networks = []string{"a", "b", "c"} }, "1.41", func(t *testing.T, s containerSpec) {
			if s.Host.NetworkMode != "a" || !slices.Equal(s.Connect, []string{"b", "c"}) {
				t.Errorf("network mode %q connect %v", s.Host.NetworkMode, s.Connect)
			}
		}},
		{"no networks: the engine's default", func(s *definition.Service) { s.Networks = nil }, "1.41", func(t *testing.T, s containerSpec) {
			if s.Host.NetworkMode != "" || s.Networking != nil {
				t.Errorf("network mode %q networking %v", s.Host.NetworkMode, s.Networking)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := baseService()
			if tc.change != nil {
				tc.change(&svc)
			}
			s, err := buildSpec(svc, sc, tc.api)
			if err != nil {
				t.Fatalf("buildSpec: %v", err)
			}
			tc.check(t, s)
		})
	}
}

func TestBuildSpec_Refuses(t *testing.T) {
	cases := []struct {
		name      string
		change    func(*definition.Service)
		wantField string
		wantMsg   string
	}{
		{"reserved label", func(s *definition.Service) { s.Labels[LabelVersion] = "x" }, "labels.io.mythex.version", "sets itself"},
		{"reserved legacy label", func(s *definition.Service) { s.Labels["mythex.version"] = "x" }, "labels.mythex.version", "sets itself"},
		{"reserved legacy managed label", func(s *definition.Service) { s.Labels["mythex.managed"] = "true" }, "labels.mythex.managed", "sets itself"},
		{"process-only health check", func(s *definition.Service) { s.Healthcheck.Test = nil }, "healthcheck.test", "x-mythex.health_path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := baseService()
			tc.change(&svc)
			_, err := buildSpec(svc, scope{host: "web-1"}, "1.41")
			var fe *definition.FieldError
			if !errors.Is(err, definition.ErrInvalid) || !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a definition.FieldError", err)
			}
			if fe.Service != "api" || fe.Field != tc.wantField || !strings.Contains(fe.Msg, tc.wantMsg) {
				t.Errorf("got %q (field %q), want field %q containing %q", err, fe.Field, tc.wantField, tc.wantMsg)
			}
		})
	}
}

func TestGraceSeconds(t *testing.T) {
	cases := []struct {
		name  string
		grace time.Duration
		want  int
	}{
		{"zero kills at once", 0, 0},
		{"negative is zero", -time.Second, 0},
		{"whole seconds", 30 * time.Second, 30},
		{"a fraction rounds up", 1500 * time.Millisecond, 2},
		{"a nanosecond past rounds up", 10*time.Second + 1, 11},
		{"under a second is one", 100 * time.Millisecond, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := graceSeconds(tc.grace); got != tc.want {
				t.Errorf("graceSeconds(%v) = %d, want %d", tc.grace, got, tc.want)
			}
		})
	}
}

func TestContainerName(t *testing.T) {
	spec := strings.Repeat("ab", 32)
	cases := []struct {
		name, host, service, want string
	}{
		{"host and service", "web-1", "api", "mythex-web-1-api-abababababab"},
		{"no host", "", "publish-worker", "mythex-publish-worker-abababababab"},
		{"characters Docker refuses", "web 1/eu", "api", "mythex-web-1-eu-api-abababababab"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := containerName(tc.host, tc.service, spec); got != tc.want {
				t.Errorf("containerName = %q, want %q", got, tc.want)
			}
		})
	}
}

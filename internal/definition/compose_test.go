package definition

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const minimalCompose = `
services:
  api:
    image: mythex/app:${MYTHEX_VERSION}
    command: ["--service", "api"]
    environment:
      MYTHEX_APP_VERSION: ${MYTHEX_VERSION}
      MYTHEX_APP_LISTEN: 127.0.0.1:9111
    x-mythex:
      executable: ./bin/app
      port: 9111
      health_path: /healthz
`

func TestResolve_Minimal(t *testing.T) {
	path := writeCompose(t, minimalCompose)
	d, err := Resolve(context.Background(), Input{ComposeFile: path, Version: "v7"})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if len(d.Services) != 1 {
		t.Fatalf("services = %d, want 1", len(d.Services))
	}
	s := d.Services[0]
	dir := filepath.Dir(path)
	checks := []struct {
		name      string
		got, want any
	}{
		{"image interpolated", s.Image, "mythex/app:v7"},
		{"env interpolated", s.Environment["MYTHEX_APP_VERSION"], "v7"},
		{"MYTHEX_VERSION set", s.Environment[EnvVersion], "v7"},
		{"MYTHEX_SERVICE set", s.Environment[EnvService], "api"},
		{"no host, no MYTHEX_HOST", s.Environment[EnvHost], ""},
		{"service version", s.Version, "v7"},
		{"command", strings.Join(s.Command, " "), "--service api"},
		{"executable absolute", s.Process.Executable, filepath.Join(dir, "bin", "app")},
		{"working dir default", s.Process.WorkingDir, dir},
		{"port", s.Process.Port, 9111},
		{"grace default (Docker)", s.StopGracePeriod, 10 * time.Second},
		{"restart default", s.Restart, RestartPolicy{Policy: RestartNo}},
		{"HTTP healthcheck", len(s.Healthcheck.Test), 0},
		{"health interval default", s.Healthcheck.Interval, 30 * time.Second},
		{"health timeout default", s.Healthcheck.Timeout, 30 * time.Second},
		{"health retries default", s.Healthcheck.Retries, 3},
		{"health start interval default", s.Healthcheck.StartInterval, 5 * time.Second},
		{"source file", d.Source.File, path},
		{"hash set", len(d.Hash), 64},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestResolve_Fields(t *testing.T) {
	d := resolve(t, `
services:
  worker:
    image: busybox
    entrypoint: /bin/worker --fast
    command: run "two words"
    stop_grace_period: 1m30s
    restart: on-failure:5
    labels: [a=1, b=2]
    env_file: [extra.env]
    healthcheck:
      test: ["CMD", "/bin/check", "--quick"]
      interval: 5s
      timeout: 2s
      retries: 4
      start_period: 20s
      start_interval: 500ms
`[1:], "extra.env", "FROM_FILE=yes\n")
	s := d.Services[0]
	if got := strings.Join(s.Entrypoint, "|"); got != "/bin/worker|--fast" {
		t.Errorf("entrypoint = %q", got)
	}
	if got := strings.Join(s.Command, "|"); got != "run|two words" {
		t.Errorf("command = %q (string form is split by shell-word rules, never run by a shell)", got)
	}
	if s.StopGracePeriod != 90*time.Second {
		t.Errorf("grace = %v", s.StopGracePeriod)
	}
	if s.Restart != (RestartPolicy{Policy: RestartOnFailure, MaxRetries: 5}) {
		t.Errorf("restart = %+v", s.Restart)
	}
	if s.Labels["a"] != "1" || s.Labels["b"] != "2" {
		t.Errorf("labels = %v", s.Labels)
	}
	if s.Environment["FROM_FILE"] != "yes" {
		t.Errorf("env_file not merged: %v", s.Environment)
	}
	h := s.Healthcheck
	want := Healthcheck{Test: []string{"/bin/check", "--quick"}, Interval: 5 * time.Second, Timeout: 2 * time.Second, Retries: 4, StartPeriod: 20 * time.Second, StartInterval: 500 * time.Millisecond}
	if !slices.Equal(h.Test, want.Test) || h.Interval != want.Interval || h.Timeout != want.Timeout || h.Retries != want.Retries || h.StartPeriod != want.StartPeriod || h.StartInterval != want.StartInterval {
		t.Errorf("healthcheck = %+v, want %+v", *h, want)
	}
	if s.Process != nil {
		t.Errorf("process = %+v, want nil without x-mythex", s.Process)
	}
}

func TestResolve_Deterministic(t *testing.T) {
	t.Setenv("API_PORT", "1234") // the deployer's environment must not leak in
	path := writeCompose(t, minimalCompose)
	a, err := Resolve(context.Background(), Input{ComposeFile: path, Version: "v1", Host: "web-1", Vars: map[string]string{"X": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Resolve(context.Background(), Input{ComposeFile: path, Version: "v1", Host: "web-1", Vars: map[string]string{"X": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash != b.Hash {
		t.Errorf("two resolutions differ: %s %s", a.Hash, b.Hash)
	}
	c, err := Resolve(context.Background(), Input{ComposeFile: path, Version: "v2", Host: "web-1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Hash == a.Hash || c.Source.SHA256 != a.Source.SHA256 {
		t.Errorf("a new version must change the hash but not the source: %s %s / %s %s", a.Hash, c.Hash, a.Source.SHA256, c.Source.SHA256)
	}
}

func TestResolve_HostVars(t *testing.T) {
	path := writeCompose(t, `
services:
  gateway:
    image: app:${MYTHEX_VERSION}
    environment:
      LISTEN: 127.0.0.1:${MYTHEX_TARGET_PORT}
      HOST: ${MYTHEX_HOST}
      TARGET: ${MYTHEX_TARGET}
    x-mythex: {executable: /bin/app, port: "${MYTHEX_TARGET_PORT}", health_path: /healthz}
  api:
    image: app:${MYTHEX_VERSION}
    environment:
      LISTEN: 127.0.0.1:${API_PORT}
      MODE: ${MODE:-fast}
    x-mythex: {executable: /bin/app, port: "${API_PORT}"}
`)
	d, err := Resolve(context.Background(), Input{ComposeFile: path, Version: "v1", Host: "web-2", Target: "127.0.0.1:9102", Vars: map[string]string{"API_PORT": "9112"}})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	gw, _ := d.Service("gateway")
	api, _ := d.Service("api")
	checks := []struct {
		name      string
		got, want any
	}{
		{"gateway listens on the target port", gw.Environment["LISTEN"], "127.0.0.1:9102"},
		{"gateway x-mythex port", gw.Process.Port, 9102},
		{"host name", gw.Environment["HOST"], "web-2"},
		{"MYTHEX_HOST env", gw.Environment[EnvHost], "web-2"},
		{"target", gw.Environment["TARGET"], "127.0.0.1:9102"},
		{"api port from host vars", api.Process.Port, 9112},
		{"api listen", api.Environment["LISTEN"], "127.0.0.1:9112"},
		{"default applies when unset", api.Environment["MODE"], "fast"},
		{"definition host", d.Host, "web-2"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestResolve_Errors(t *testing.T) {
	svc := func(extra string) string {
		return "services:\n  api:\n    image: app\n" + extra
	}
	cases := []struct {
		name      string
		compose   string
		in        Input
		wantSvc   string
		wantField string
		wantMsg   string
	}{
		{"shell healthcheck", svc("    healthcheck:\n      test: [\"CMD-SHELL\", \"curl -f http://x/ || exit 1\"]\n"), Input{}, "api", "healthcheck.test", "shell"},
		{"string healthcheck is shell form", svc("    healthcheck:\n      test: curl -f http://x/\n"), Input{}, "api", "healthcheck.test", "shell"},
		{"empty CMD", svc("    healthcheck:\n      test: [\"CMD\"]\n"), Input{}, "api", "healthcheck.test", "names no program"},
		{"healthcheck without test or health_path", svc("    healthcheck:\n      interval: 5s\n"), Input{}, "api", "healthcheck.test", "x-mythex.health_path"},
		{"disabled healthcheck with health_path", svc("    healthcheck: {disable: true}\n    x-mythex: {executable: /bin/a, port: 1, health_path: /h}\n"), Input{}, "api", "healthcheck.disable", "remove one"},
		{"unsupported attribute", svc("    volumes: [\"/data:/data\"]\n"), Input{}, "api", "volumes", "not supported"},
		{"port without host port", svc("    ports: [\"80\"]\n"), Input{}, "api", "ports[0]", "no host port"},
		{"port range", svc("    ports: [{target: 80, published: \"8080-8081\"}]\n"), Input{}, "api", "ports[0].published", "not a single port"},
		{"port host_ip not an IP (compose rule)", svc("    ports: [{target: 80, published: \"8080\", host_ip: localhost}]\n"), Input{}, "", "(compose)", "invalid ip address"},
		{"port published twice", svc("    ports: [\"8080:80\", \"127.0.0.1:8080:81\"]\n"), Input{}, "api", "ports[1]", "published once"},
		{"unsupported port attribute", svc("    ports: [{target: 80, published: \"8080\", app_protocol: http}]\n"), Input{}, "api", "ports.[].app_protocol", "not supported"},
		{"unsupported network driver", svc("    networks: [front]\nnetworks:\n  front:\n    driver: overlay\n"), Input{}, "", "networks.front.driver", "not supported"},
		{"unsupported service network option", svc("    networks:\n      front:\n        aliases: [a]\nnetworks:\n  front: {}\n"), Input{}, "api", "networks.front.aliases", "not supported"},
		{"unset variable", svc("    environment:\n      X: ${NOPE}\n"), Input{}, "", "(interpolation)", "NOPE is used (line 5) but not set"},
		{"deployer env does not leak", svc("    environment:\n      X: ${HOME}\n"), Input{}, "", "(interpolation)", "HOME is used"},
		{"env without value", svc("    environment: [LONELY]\n"), Input{}, "api", "environment.LONELY", "has no value"},
		{"reserved env overridden", svc("    environment:\n      MYTHEX_VERSION: v0\n"), Input{}, "api", "environment.MYTHEX_VERSION", "mythex sets"},
		{"x-mythex unknown key", svc("    x-mythex: {executable: /bin/a, prot: 1}\n"), Input{}, "api", "x-mythex.prot", "unknown key"},
		{"x-mythex without executable", svc("    x-mythex: {port: 1}\n"), Input{}, "api", "x-mythex.executable", "required"},
		{"x-mythex not a mapping", svc("    x-mythex: ./bin/app\n"), Input{}, "api", "x-mythex", "mapping"},
		{"port not a number", svc("    x-mythex: {executable: /bin/a, port: http}\n"), Input{}, "api", "x-mythex.port", "1–65535"},
		{"port from var out of range", svc("    x-mythex: {executable: /bin/a, port: \"${P}\"}\n"), Input{Vars: map[string]string{"P": "99999"}}, "api", "x-mythex.port", "1–65535"},
		{"restart unknown", svc("    restart: sometimes\n"), Input{}, "api", "restart", "unknown restart policy"},
		{"restart count on always", svc("    restart: always:3\n"), Input{}, "api", "restart", "only to on-failure"},
		{"reserved var name", svc(""), Input{Vars: map[string]string{"MYTHEX_X": "1"}}, "", "(vars)", "reserved"},
		{"compose schema error", svc("    stop_grace_period: [1]\n"), Input{}, "", "(compose)", "stop_grace_period"},
		{"no image (compose rule)", "services:\n  api:\n    command: [x]\n", Input{}, "", "(compose)", "neither an image nor a build context"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.ComposeFile = writeCompose(t, tc.compose)
			if in.Version == "" {
				in.Version = "v1"
			}
			_, err := Resolve(context.Background(), in)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err %T is not a *FieldError", err)
			}
			if fe.Service != tc.wantSvc || fe.Field != tc.wantField || !strings.Contains(fe.Msg, tc.wantMsg) {
				t.Errorf("got %q (service %q field %q), want service %q field %q containing %q", err, fe.Service, fe.Field, tc.wantSvc, tc.wantField, tc.wantMsg)
			}
			if fe.File != in.ComposeFile || !strings.HasPrefix(err.Error(), in.ComposeFile+": ") {
				t.Errorf("error %q does not name the compose file %s", err, in.ComposeFile)
			}
		})
	}
}

// TestResolve_BadVersion: the version is the caller's input (deploy's
// --version), so its error names no compose file and quotes only a short
// prefix of a long one.
func TestResolve_BadVersion(t *testing.T) {
	long := strings.Repeat("x", 5000) + " "
	cases := []struct {
		name, version, want string
	}{
		{"space", "v 2", `"v 2" is not a valid version`},
		{"starts with a dot", ".v2", `".v2" is not a valid version`},
		{"5,000 characters", long, `"` + strings.Repeat("x", 40) + `"… (5001 characters) is not a valid version`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := writeCompose(t, "services:\n  api:\n    image: a\n    x-mythex: {executable: /bin/a}\n")
			_, err := Resolve(context.Background(), Input{ComposeFile: file, Version: tc.version})
			if !errors.Is(err, ErrBadVersion) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrBadVersion and ErrInvalid", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tc.want) || strings.Contains(msg, file) || len(msg) > 300 {
				t.Errorf("error %q: want it to start %q, not name the compose file, and stay short", msg, tc.want)
			}
		})
	}
}

func TestResolve_MissingFile(t *testing.T) {
	_, err := Resolve(context.Background(), Input{ComposeFile: filepath.Join(t.TempDir(), "nope.yaml"), Version: "v1"})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want ErrNotExist", err)
	}
}

func TestResolve_PortsAndNetworks(t *testing.T) {
	cases := []struct {
		name         string
		compose      string
		wantPorts    []Port
		wantNetworks []string
	}{
		{
			name:         "short syntax gets host_ip 127.0.0.1 and tcp",
			compose:      "services:\n  api:\n    image: app\n    ports: [\"9111:8080\"]\n",
			wantPorts:    []Port{{HostIP: "127.0.0.1", Published: 9111, Target: 8080, Protocol: "tcp"}},
			wantNetworks: []string{"mythex_default"},
		},
		{
			name:         "explicit host_ip and udp kept",
			compose:      "services:\n  api:\n    image: app\n    ports: [\"0.0.0.0:9111:8080/udp\"]\n",
			wantPorts:    []Port{{HostIP: "0.0.0.0", Published: 9111, Target: 8080, Protocol: "udp"}},
			wantNetworks: []string{"mythex_default"},
		},
		{
			name:         "long syntax, in file order",
			compose:      "services:\n  api:\n    image: app\n    ports:\n      - {target: 81, published: \"9112\"}\n      - {target: 80, published: \"9111\", host_ip: 10.0.0.1, mode: host}\n",
			wantPorts:    []Port{{HostIP: "127.0.0.1", Published: 9112, Target: 81, Protocol: "tcp"}, {HostIP: "10.0.0.1", Published: 9111, Target: 80, Protocol: "tcp"}},
			wantNetworks: []string{"mythex_default"},
		},
		{
			name:         "default network named after the compose project",
			compose:      "name: shop\nservices:\n  api:\n    image: app\n",
			wantNetworks: []string{"shop_default"},
		},
		{
			name:         "listed networks resolved through their names, sorted",
			compose:      "name: shop\nservices:\n  api:\n    image: app\n    networks: [front, back]\nnetworks:\n  front: {name: edge}\n  back: {}\n",
			wantNetworks: []string{"edge", "shop_back"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := resolve(t, tc.compose).Services[0]
			if !slices.Equal(s.Ports, tc.wantPorts) {
				t.Errorf("ports = %+v, want %+v", s.Ports, tc.wantPorts)
			}
			if !slices.Equal(s.Networks, tc.wantNetworks) {
				t.Errorf("networks = %v, want %v", s.Networks, tc.wantNetworks)
			}
		})
	}
}

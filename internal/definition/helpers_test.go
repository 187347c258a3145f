package definition

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeCompose writes content as compose.yaml in a fresh directory, with
// extra files beside it given as name, content pairs, and returns its path.
func writeCompose(t *testing.T, content string, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if err := os.WriteFile(filepath.Join(dir, extra[i]), []byte(extra[i+1]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// resolve resolves content (with extra files, as writeCompose) for version v1
// without a host.
func resolve(t *testing.T, content string, extra ...string) *Definition {
	t.Helper()
	d, err := Resolve(context.Background(), Input{ComposeFile: writeCompose(t, content, extra...), Version: "v1"})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return d
}

// testDefinition builds a sealed two-service definition of version in code.
func testDefinition(t *testing.T, version string) *Definition {
	t.Helper()
	svc := func(name string, port int) Service {
		return Service{
			Name:            name,
			Version:         version,
			Image:           "mythex/app:" + version,
			Command:         []string{"--listen", "127.0.0.1:1"},
			Environment:     map[string]string{EnvVersion: version, EnvService: name, "MYTHEX_APP_SERVICE": name},
			Labels:          map[string]string{"role": "backend"},
			StopGracePeriod: 30 * time.Second,
			Restart:         RestartPolicy{Policy: RestartOnFailure, MaxRetries: 3},
			Healthcheck: &Healthcheck{
				Interval: 5 * time.Second, Timeout: 2 * time.Second, Retries: 3,
				StartPeriod: 10 * time.Second, StartInterval: time.Second,
			},
			Process:  &ProcessSpec{Executable: "/opt/app/bin/app", WorkingDir: "/opt/app", Port: port, HealthPath: "/healthz"},
			Ports:    []Port{{HostIP: DefaultPortHostIP, Published: port, Target: 8080, Protocol: "tcp"}},
			Networks: []string{"mythex_default"},
		}
	}
	d := &Definition{
		Version:  version,
		Source:   Source{File: "/srv/compose.yaml", SHA256: "00"},
		Services: []Service{svc("orchestrator", 9121), svc("api", 9111)},
	}
	if err := d.Seal(); err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return d
}

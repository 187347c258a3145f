package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCertsCmd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	if code, out, errOut := runCLI(t, "certs", "init", "--dir", dir); code != 0 || !strings.Contains(out, "ca.crt") {
		t.Fatalf("certs init = %d %q %q", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "certs", "issue", "--dir", dir, "--name", "web-1", "--server", "--host", "127.0.0.1"); code != 0 || !strings.Contains(out, "web-1.crt") {
		t.Fatalf("certs issue --server = %d %q %q", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "certs", "issue", "--dir", dir, "--name", "deployer", "--client", "--json"); code != 0 || !strings.Contains(out, `"kind":"client"`) {
		t.Fatalf("certs issue --client --json = %d %q %q", code, out, errOut)
	}
	bad := []struct {
		name string
		args []string
		want string
	}{
		{"init twice never overwrites the key", []string{"certs", "init", "--dir", dir}, "exists"},
		{"server without host", []string{"certs", "issue", "--dir", dir, "--name", "web-2", "--server"}, "--host"},
		{"neither server nor client", []string{"certs", "issue", "--dir", dir, "--name", "web-2"}, "exactly one"},
		{"no name", []string{"certs", "issue", "--dir", dir, "--client"}, "--name"},
		{"no CA", []string{"certs", "issue", "--dir", t.TempDir(), "--name", "x", "--client"}, "certs init"},
		{"issued twice", []string{"certs", "issue", "--dir", dir, "--name", "deployer", "--client"}, "exists"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d stderr %q; want 2 mentioning %q", code, errOut, tc.want)
			}
		})
	}
}

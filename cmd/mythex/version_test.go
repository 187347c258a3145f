package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/buildinfo"
)

func TestVersionCmd(t *testing.T) {
	code, out, errOut := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "mythex ") || !strings.Contains(out, "go1.") {
		t.Fatalf("version = %d %q %q; want 0 and 'mythex <version> … go1.x'", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "version", "--json")
	var vi buildinfo.Info
	if code != 0 || json.Unmarshal([]byte(out), &vi) != nil || vi.Version == "" || !strings.HasPrefix(vi.Go, "go1.") {
		t.Fatalf("version --json = %d %q %q; want one JSON object with version and go", code, out, errOut)
	}
	if text := vi.String(); !strings.HasPrefix(text, "mythex "+vi.Version) {
		t.Errorf("text form %q does not start with the JSON's version %q", text, vi.Version)
	}
}

// TestDeployCmd_BadVersionNamesTheFlag: a --version that cannot be a release
// is the flag's fault, not the compose file's, and a long one is not echoed
// whole.
func TestDeployCmd_BadVersionNamesTheFlag(t *testing.T) {
	bad := "v 2" + strings.Repeat("x", 5000)
	code, out, errOut := runCLI(t, "deploy", "-f", filepath.Join("..", "..", "examples", "local", "mythex.yml"), "--version", bad)
	if code != 2 {
		t.Fatalf("exit %d, want 2 (stdout %q)", code, out)
	}
	if !strings.Contains(errOut, "--version: ") || strings.Contains(errOut, "compose.yaml") || len(errOut) > 400 {
		t.Errorf("stderr %q: want it to name --version, not the compose file, and stay short", errOut)
	}
}

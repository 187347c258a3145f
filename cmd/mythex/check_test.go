package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/mythex/mythex/internal/termui"
)

// runCLI runs the real CLI entry point (run, with its one exit-code boundary)
// and returns the exit code and what it wrote to stdout and stderr. It swaps
// the test process's os.Stdout and os.Stderr for the call, so calls take
// cliMu one at a time: parallel tests may use it for short commands (a long
// one holds every other caller; run those as processes, runMythexSplit).
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cliMu.Lock()
	defer cliMu.Unlock()
	dir := t.TempDir()
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	errF, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outF, errF
	func() {
		defer func() { os.Stdout, os.Stderr = oldOut, oldErr }() // under cliMu, even if run panics
		code = run(args)
	}()
	for _, f := range []*os.File{outF, errF} {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	o, _ := os.ReadFile(outF.Name())
	e, _ := os.ReadFile(errF.Name())
	return code, string(o), string(e)
}

// cliMu serializes runCLI's swaps of os.Stdout and os.Stderr.
var cliMu sync.Mutex

func seed(name string) string { return filepath.Join("..", "..", "examples", "seed", name) }

func TestCheckCmd_Text(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		code     int
		contains []string
	}{
		{"after holds", []string{"check", "-f", seed("after.yml")}, 0, []string{
			"✓ overlap            serve_period 15s > detect 12s (interval 5s × unhealthy_threshold 2 + timeout 2s) — slack 3s",
			"breaks at: drain.serve_period ≤ 12s,",
			"load_balancer.health_check.interval ≥ 6.5s",
			"✓ all 8 invariants hold",
		}},
		{"before fails overlap by 57s", []string{"check", "-f", seed("before.yml")}, 1, []string{
			"✗ overlap            serve_period 5s > detect 62s (interval 30s × unhealthy_threshold 2 + timeout 2s) — short by 57s",
			"for up to 57s the LB can send new requests",
			"holds at: load_balancer.health_check.interval < 1.5s",
			"holds at: watchdog.failures_before_heal ≥ 4",
			"✗ 2 of 8 invariants fail: overlap, watchdog-patience",
		}},
		{"marginal does not fail", []string{"check", "-f", filepath.Join("..", "..", "internal", "timing", "testdata", "cases", "keepalive-guardian-10450-fixed.yml")}, 0, []string{
			"! keep-alive         keepalive_idle_timeout 5s > idle_timeout 4s — slack 1s",
			"! all 8 invariants hold; 1 marginal: keep-alive",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tc.code, errOut)
			}
			for _, want := range tc.contains {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "\x1b[") {
				t.Errorf("colour codes in output that is not a terminal")
			}
		})
	}
}

func TestCheckCmd_JSON(t *testing.T) {
	code, out, _ := runCLI(t, "check", "-f", seed("before.yml"), "--json")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	var got termui.CheckJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if got.OK || got.Level != "fail" || len(got.Invariants) != 8 {
		t.Fatalf("ok %v level %s invariants %d", got.OK, got.Level, len(got.Invariants))
	}
	ov := got.Invariants[0]
	if ov.Name != "overlap" || ov.OK || ov.Level != "fail" || ov.SlackSeconds == nil || *ov.SlackSeconds != -57 {
		t.Errorf("overlap = %+v", ov)
	}
	if b := ov.BreaksAt["load_balancer.health_check.interval"]; len(b) != 1 || !reflect.DeepEqual(b[0], termui.BreakJSON{Op: ">=", Value: "1.5s", AlsoBreaks: []string{"check-timeout"}}) {
		t.Errorf("overlap breaks_at = %+v", ov.BreaksAt)
	}
	if !strings.Contains(ov.Detail, "serve_period 5s > detect 62s") {
		t.Errorf("detail = %q", ov.Detail)
	}

	code, out, _ = runCLI(t, "check", "-f", seed("after.yml"), "--json")
	if code != 0 {
		t.Errorf("after: exit %d, want 0", code)
	}
	var after map[string]any
	if err := json.Unmarshal([]byte(out), &after); err != nil {
		t.Fatal(err)
	}
	inv := after["invariants"].([]any)[0].(map[string]any)
	for _, key := range []string{"name", "ok", "level", "detail", "slack_seconds", "breaks_at"} {
		if _, ok := inv[key]; !ok {
			t.Errorf("invariant JSON lacks %q: %v", key, inv)
		}
	}
	if after["ok"] != true {
		t.Errorf("after ok = %v", after["ok"])
	}
}

func TestCheckCmd_BadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("load_balancer:\n  helth_check: {}\ndrain:\n  serve_period: 5\n  shutdown_timeout: 1s\nbackend:\n  keepalive_idle_timeout: 75s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		args    []string
		wantErr []string
	}{
		{"invalid config names file, line and field", []string{"check", "-f", bad}, []string{
			bad + ":2: load_balancer.helth_check: unknown key; did you mean \"health_check\"?",
			bad + ":4: drain.serve_period: 5 is a bare number",
		}},
		{"missing file", []string{"check", "-f", filepath.Join(dir, "nope.yml")}, []string{"no such file"}},
		{"a path that does not exist", []string{"check", "after.yml"}, []string{"input not understood", "after.yml"}},
		{"-f and paths together", []string{"check", "-f", bad, dir}, []string{"give either -f mythex.yml or PATH arguments, not both"}},
		{"unknown format", []string{"check", dir, "--format", "xml"}, []string{`--format "xml": want text, json or github`}},
		{"unknown flag", []string{"check", "--jsn"}, []string{"unknown flag: --jsn"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing on bad input", out)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %q lacks %q", errOut, want)
				}
			}
		})
	}
}

func TestCheckCmd_DefaultFile(t *testing.T) {
	data, err := os.ReadFile(seed("after.yml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mythex.yml"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	code, out, errOut := runCLI(t, "check")
	if code != 0 || !strings.HasPrefix(out, "mythex check mythex.yml\n") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestCheckCmd_Help(t *testing.T) {
	code, out, _ := runCLI(t, "check", "--help")
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	for _, want := range []string{"mythex check -f examples/seed/after.yml", "-f, --file string", `(default "mythex.yml")`, "--json", "Exit status"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
}

package hooks

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	ev := Event{Hook: "post_deploy", Version: "v2", Result: "ok", Hosts: []string{"web-1", "web-2"}}
	ctx := context.Background()

	t.Run("environment and no shell", func(t *testing.T) {
		var out bytes.Buffer
		// printenv prints the variables; a ';' in an argument is data, not a
		// shell separator.
		if err := Run(ctx, []string{"printenv", EnvVersion, EnvResult, EnvHosts, EnvHook}, ev, 0, &out); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != "v2\nok\nweb-1,web-2\npost_deploy\n" {
			t.Fatalf("hook saw %q", got)
		}
		marker := filepath.Join(t.TempDir(), "pwned")
		_ = Run(ctx, []string{"echo", "x; touch " + marker}, ev, 0, nil)
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("an argument reached a shell")
		}
	})
	t.Run("no hook", func(t *testing.T) {
		if err := Run(ctx, nil, ev, 0, nil); err != nil {
			t.Fatal(err)
		}
	})
	cases := []struct {
		name    string
		argv    []string
		timeout time.Duration
		check   func(*Error) bool
		text    string
	}{
		{"non-zero exit", []string{"sh", "-c", "echo chat is down >&2; exit 3"}, 0,
			func(e *Error) bool { return e.ExitCode == 3 && !e.TimedOut }, "exited 3: chat is down"},
		{"missing program", []string{"mythex-no-such-hook"}, 0,
			func(e *Error) bool { return e.ExitCode == -1 }, "executable file not found"},
		{"timeout", []string{"sleep", "30"}, 200 * time.Millisecond,
			func(e *Error) bool { return e.TimedOut }, "ran out of time"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Run(ctx, tc.argv, ev, tc.timeout, nil)
			var he *Error
			if !errors.As(err, &he) || !tc.check(he) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("Run = %#v (%v); want %q", he, err, tc.text)
			}
		})
	}
}

package testbin

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	cases := []struct {
		name     string
		bin      string
		args     []string
		env      []string
		code     int
		stdout   string
		startErr bool
	}{
		{"exits 0", "/bin/sh", []string{"-c", "echo out; echo err >&2"}, nil, 0, "out\n", false},
		{"its exit code", "/bin/sh", []string{"-c", "exit 3"}, nil, 3, "", false},
		{"the environment given", "/bin/sh", []string{"-c", `echo "$RUN_TEST_VAR"`}, []string{"RUN_TEST_VAR=given"}, 0, "given\n", false},
		{"ended by a signal", "/bin/sh", []string{"-c", "kill -KILL $$"}, nil, -1, "", false},
		{"not there", "/nonexistent/program", nil, nil, 0, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code, err := Run(c.bin, c.env, &out, &errOut, c.args...)
			if (err != nil) != c.startErr {
				t.Fatalf("error %v, want one: %v", err, c.startErr)
			}
			if code != c.code || out.String() != c.stdout {
				t.Errorf("exit %d, stdout %q; want %d, %q", code, out.String(), c.code, c.stdout)
			}
			if c.name == "exits 0" && !strings.Contains(errOut.String(), "err") {
				t.Errorf("stderr %q, want the program's", errOut.String())
			}
		})
	}
}

package testkit

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// exitChildEnv makes this test binary, run again, exit with the code it
// names through Exit (TestExit_KeepsTheCode).
const exitChildEnv = "TESTKIT_EXIT_CHILD"

// TestExit_KeepsTheCode runs this binary again as a child that calls Exit:
// the code comes through whatever it is. How long the child took is logged,
// not asserted (a wall-clock bound fails on a loaded machine): under -race a
// passing child takes well under the detector's one-second pause.
func TestExit_KeepsTheCode(t *testing.T) {
	if v := os.Getenv(exitChildEnv); v != "" {
		code, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", exitChildEnv, v, err)
		}
		Exit(code)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		code int
	}{{"passing", 0}, {"failing", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run", "^TestExit_KeepsTheCode$")
			cmd.Env = append(os.Environ(), exitChildEnv+"="+strconv.Itoa(tc.code))
			begin := time.Now()
			err := cmd.Run()
			took := time.Since(begin)
			got := 0
			if ee, ok := err.(*exec.ExitError); ok {
				got = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if got != tc.code {
				t.Fatalf("child exited %d, want %d", got, tc.code)
			}
			t.Logf("child took %v (race detector: %v)", took.Round(time.Millisecond), raceEnabled)
		})
	}
}

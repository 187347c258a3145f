package testkit

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// exitChildEnv makes this test binary, run again, exit with the code it
// names through Exit (TestExit_PassingRaceBinaryDoesNotSleep).
const exitChildEnv = "TESTKIT_EXIT_CHILD"

// TestExit_KeepsTheCode runs this binary again as a child that calls Exit:
// the code comes through whatever it is, and a passing child of a -race
// build exits without the race detector's one-second pause.
func TestExit_KeepsTheCode(t *testing.T) {
	if code := os.Getenv(exitChildEnv); code != "" {
		Exit(map[string]int{"0": 0, "3": 3}[code])
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
			cmd.Env = append(os.Environ(), exitChildEnv+"="+map[int]string{0: "0", 3: "3"}[tc.code])
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

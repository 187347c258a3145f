package main

import (
	"os"
	"os/exec"
	"strings"
)

// asMythexEnv, set to 1 in a child's environment, makes this test binary
// the mythex command: TestMain calls runAsMythex first, which runs
// run(os.Args[1:]) — main's own code — and exits with its code before any
// test flag is parsed.
//
// The tests here that need the CLI as a process of its own (signals, exit
// codes, a daemon, an agent) start this binary so (mythexCommand), not a
// separately built mythex: that build compiles every dependency again
// without -race, some 110 CPU-seconds on a cold build cache, and this
// package's tests waited a minute for it while go test's other packages
// queued behind them. The children run built with the tests' own flags, so
// under `go test -race` a data race in the CLI makes it report the race and
// exit 66 (the race detector's exit code), which a test that checks the
// command's exit status fails on.
// What needs the release binary itself — its resident memory, a FROM
// scratch image — is in e2e or builds it (testbin).
const asMythexEnv = "MYTHEX_TEST_AS_MYTHEX"

// runAsMythex runs this process as the mythex CLI and exits when
// asMythexEnv is 1; otherwise it returns at once. The variable is dropped
// first: what the CLI starts in turn (the command `mythex measure` runs, a
// service) must not inherit it — a command the tests start is this binary
// in its helper role (TestMeasureHelperProcess).
func runAsMythex() {
	if os.Getenv(asMythexEnv) == "1" {
		_ = os.Unsetenv(asMythexEnv)
		os.Exit(run(os.Args[1:]))
	}
}

// mythexCommand returns a command that runs the mythex CLI with args as a
// process of its own: this test binary, in the environment mythexEnv(env).
func mythexCommand(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = mythexEnv(env)
	return cmd
}

// mythexEnv is env (nil: this process's environment) with asMythexEnv, for
// this test binary to run as the mythex CLI (runAsMythex). GORACE gains
// atexit_sleep_ms=0: a binary built with -race otherwise sleeps a second at
// exit, once per command a test runs.
func mythexEnv(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return append(append([]string(nil), env...), asMythexEnv+"=1", "GORACE="+gorace)
}

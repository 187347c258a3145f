package testkit

import (
	"os"
	"syscall"
	"testing"
)

// Main runs the package's tests and exits with their result (Exit): every
// package of this module calls it from its TestMain, which a test of this
// package checks.
func Main(m *testing.M) { Exit(m.Run()) }

// Exit ends a test binary with code, as os.Exit does, but a passing binary
// built with -race exits at once: os.Exit(0) first runs the race
// detector's finalizer, which sleeps atexit_sleep_ms (GORACE; default
// 1000 ms) so that goroutines still running may report a race. `go test
// -race ./...` runs one test binary per package, and at most -p of them (the
// number of CPUs) at once, so that sleep alone added about a second per
// package to the suite's critical path: some seventy seconds of lanes, more
// than half a minute of wall time on two CPUs. Nothing is lost that the
// tests check: testing.M.Run has already failed any test during which the
// detector found a race, and reports one found between tests; only a race
// in a goroutine that outlives every test, found in that last second, goes
// unreported. A failing code, a binary without -race and a run that
// collects coverage (its profile is written by os.Exit's hooks) take
// os.Exit.
func Exit(code int) {
	if code == 0 && raceEnabled && testing.CoverMode() == "" {
		syscall.Exit(0)
	}
	os.Exit(code)
}

// Package e2e holds mythex's end-to-end tests: they run mythex's parts as the
// real processes a user runs — fleets of agents and services behind the
// embedded LB, HAProxy or the ALB driver, `mythex lb`, `mythex sample-app`,
// the prober, the Docker runtime, SSH, the deploy, rollback and history
// commands as run from a shell — and prove the write-up's result and the
// fault matrix on them. It has no code of its own.
//
// Why one package, at the top of the module: every test here waits on its
// fleet's timings, not on CPU, and `go test ./...` runs only as many test
// binaries at once as the machine has CPUs, in import-path order. Held in one
// test binary, the fleets take one of those slots (not one per package), and
// the binary starts right after cmd/mythex's, while the rest of the module's
// packages are built and tested in the other slots. The CLI's tests that
// need a fleet are here too, run from a shell: in cmd/mythex they held the
// other slot while they waited for a fleet. How many fleets run at once,
// across every test process, is testbin.FleetSlot's.
package e2e

package e2e

import (
	"testing"

	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
)

func TestMain(m *testing.M) {
	// Every test here runs its own fleet (an LB, agents, a few services a
	// host, a prober) and waits mostly on its timings: they all run in
	// parallel, and how many fleets run at once is bounded across the whole
	// suite by testbin.FleetSlot, not here — starved fleets fail their
	// 400 ms health checks and outlast the scaled 3 s lease TTL.
	testbin.SetParallel(32)
	code := m.Run()
	testbin.Cleanup()
	testkit.Exit(code)
}

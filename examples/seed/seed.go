// Package seed embeds the write-up's two fleets, before.yml and after.yml, so
// that `mythex demo` runs the real numbers from the one copy `mythex check`
// and the tests read.
package seed

import _ "embed"

// Before is examples/seed/before.yml: the fleet before the write-up's fixes
// (interval 30s, unhealthy threshold 2, drain 5s).
//
//go:embed before.yml
var Before []byte

// After is examples/seed/after.yml: the fleet after the fixes (interval 5s,
// unhealthy threshold 2, drain 15s, watchdog 4 strikes).
//
//go:embed after.yml
var After []byte

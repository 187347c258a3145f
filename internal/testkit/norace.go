//go:build !race

package testkit

// raceEnabled says the binary was built with -race.
const raceEnabled = false

//go:build !linux

package probe

import "time"

// sleepPrecisely sleeps d. Off Linux it is an ordinary sleep: the schedule
// is kept, with the resolution of Go's timers.
func sleepPrecisely(d time.Duration) { time.Sleep(d) }

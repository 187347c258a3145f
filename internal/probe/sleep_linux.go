package probe

import (
	"syscall"
	"time"
)

// sleepPrecisely blocks the calling thread for d with nanosleep(2), which on
// Linux wakes within the thread's timer slack (50 µs by default) instead of
// the millisecond Go's idle timer wait may take.
func sleepPrecisely(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}

package testbin

import (
	"net"
	"testing"
	"time"
)

// listenPoll is how often WaitListening dials.
const listenPoll = 20 * time.Millisecond

// WaitListening waits until something accepts TCP connections at addr
// (host:port), dialling every 20 ms, each dial bounded by a second; after
// limit it fails t naming the address and the last dial's error. For tests
// that start a server as a process of its own and must not use it before it
// listens.
func WaitListening(t testing.TB, addr string, limit time.Duration) {
	t.Helper()
	end := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(end) {
			t.Fatalf("nothing listens at %s after %v: %v", addr, limit, err)
		}
		time.Sleep(listenPoll) // polling a port: nothing to select on
	}
}

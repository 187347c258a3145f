// Package freeport hands out loopback TCP ports for processes a test or the
// demo is about to start: a port picked here is free when returned, and
// nothing else is likely to take it before the child binds it.
//
// Binding 127.0.0.1:0, closing, and passing the port on races: the kernel
// hands the same ephemeral-range ports to any process's bind to port 0 and to
// the local end of every outgoing connection, so on a busy machine (many test
// processes at once) another process takes the port in the moment before the
// child binds it, and the child exits "address already in use". So Ports
// picks below the kernel's ephemeral range, where only an explicit bind takes
// a port; claims each port across processes with a file lock before it binds
// it once to see that it is free; and never hands the same port out twice in
// one process. The kernel frees a process's claims when it dies, so a crashed
// test leaves nothing held.
package freeport

import (
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/gofrs/flock"
)

// handedOut holds every port Ports has returned in this process, so two
// callers at once (tests run in parallel) are never handed the same port
// before their processes bind it.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
	// claims hold, for the life of the process, a lock on a file named
	// after each port handed out (claimPort).
	claims []*flock.Flock
}{ports: map[int]bool{}}

// Ports returns n loopback ports that are free now, were never returned
// before in this process, and are claimed against every other process that
// asks Ports. They are taken below the kernel's ephemeral range when it is
// known (Linux); elsewhere the kernel picks them (bind to port 0), still
// claimed. Errors: no n free ports after 100 tries each, or (where the
// kernel picks) a bind to port 0 that fails.
func Ports(n int) ([]int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	low := ephemeralLow()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("find %d free ports: tried %d", n, tries)
		}
		var port int
		var ok bool
		if low > minPort+n {
			port, ok = tryPort(minPort+mrand.IntN(low-minPort), net.Listen)
		} else {
			var err error
			if port, ok, err = tryEphemeralPort(&ls); err != nil {
				return nil, err
			}
		}
		if ok {
			handedOut.ports[port] = true
			ports = append(ports, port)
		}
	}
	return ports, nil
}

// tryPort claims port and then binds it once with listen to see that it is
// free: claimed first, bound second, because a port another process claimed
// may be bound by it at any moment, and even a test bind here would make its
// bind fail ("address already in use"). A port taken by a process that does
// not claim is given back. handedOut must be held.
func tryPort(port int, listen func(network, address string) (net.Listener, error)) (int, bool) {
	if handedOut.ports[port] {
		return port, false
	}
	ok, undo := claimPort(port)
	if !ok {
		return port, false
	}
	l, err := listen("tcp", addr(port))
	if err != nil {
		undo()
		return port, false
	}
	l.Close()
	return port, true
}

// tryEphemeralPort binds port 0 and claims the port the kernel gave; the
// listener joins ls, held until Ports returns so the kernel does not give
// the same port twice. handedOut must be held.
func tryEphemeralPort(ls *[]net.Listener) (int, bool, error) {
	l, err := net.Listen("tcp", addr(0))
	if err != nil {
		return 0, false, fmt.Errorf("find a free port: %w", err)
	}
	*ls = append(*ls, l)
	port := l.Addr().(*net.TCPAddr).Port
	if handedOut.ports[port] {
		return port, false, nil
	}
	ok, _ := claimPort(port)
	return port, ok, nil
}

// minPort is the lowest port Ports picks below the ephemeral range.
const minPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range (from
// /proc/sys/net/ipv4/ip_local_port_range), or 0 when unknown.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return low
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

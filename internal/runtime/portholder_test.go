package runtime

import (
	"net"
	"os"
	"strings"
	"testing"
)

func TestPortHolder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	l, ok := PortHolder(port)
	if !ok || l.PID != os.Getpid() || !strings.Contains(l.String(), "pid ") {
		t.Errorf("PortHolder(%d) = %+v, %v; want this process", port, l, ok)
	}
	ln.Close()
	if l, ok := PortHolder(port); ok {
		t.Errorf("PortHolder(%d) after close = %+v, want nobody", port, l)
	}
}

// A listener on any one address of the port, IPv4 or IPv6, is found: the
// wildcard bind that spares the /proc tables must fail beside each.
func TestPortHolder_AnyAddress(t *testing.T) {
	cases := []struct{ name, addr string }{
		{"IPv4 loopback", "127.0.0.1:0"},
		{"IPv4 wildcard", "0.0.0.0:0"},
		{"IPv6 loopback", "[::1]:0"},
		{"dual-stack wildcard", ":0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", tc.addr)
			if err != nil {
				t.Skipf("this host cannot listen on %s: %v", tc.addr, err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			if portFree(port) {
				t.Errorf("portFree(%d) = true with a listener on %s", port, ln.Addr())
			}
			if l, ok := PortHolder(port); !ok || l.PID != os.Getpid() {
				t.Errorf("PortHolder(%d) = %+v, %v; want this process", port, l, ok)
			}
		})
	}
}

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

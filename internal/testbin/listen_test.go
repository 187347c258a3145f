package testbin

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

// fatalTB records Fatalf and stops the caller as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

type fatalStop struct{}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(fatalStop{})
}

// waitOn runs WaitListening against a fatalTB and returns what it failed
// with ("" if it returned).
func waitOn(addr string) (msg string) {
	tb := &fatalTB{}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(fatalStop); !ok {
				panic(r)
			}
			msg = tb.msg
		}
	}()
	WaitListening(tb, addr, 0)
	return ""
}

func TestWaitListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	tests := []struct {
		name, addr string
		wantFail   bool
	}{
		{"a listener answers", ln.Addr().String(), false},
		// Port 1 is privileged and unused here: the dial is refused, and no
		// ephemeral port can connect to itself.
		{"nothing listens", "127.0.0.1:1", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := waitOn(tc.addr)
			if (msg != "") != tc.wantFail {
				t.Fatalf("failed with %q; want a failure: %v", msg, tc.wantFail)
			}
			if tc.wantFail && !strings.Contains(msg, tc.addr) {
				t.Errorf("failure %q does not name %s", msg, tc.addr)
			}
		})
	}
}

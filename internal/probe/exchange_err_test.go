package probe

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestObservedErr: fasthttp's errors, with what the connection's socket saw,
// reach Classify as the reasons net/http's errors did. (TestExchange_RealServers
// covers the same through real sockets; this pins the cases sockets cannot
// produce on demand.)
func TestObservedErr(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	deadline := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	conn := func(err error) *probeConn { return &probeConn{err: err} }
	// fasthttp's ErrBrokenChunk does not unwrap to the error it carries.
	brokenChunk := errors.New("cannot read chunk size: unexpected EOF")
	cases := []struct {
		name string
		err  error
		c    *probeConn
		want Outcome
	}{
		{"closed before the first byte, no connection seen", fasthttp.ErrConnectionClosed, nil, Outcome{ClassReachedNothing, ReasonEOF}},
		{"closed before the first byte: FIN", fasthttp.ErrConnectionClosed, conn(io.EOF), Outcome{ClassReachedNothing, ReasonEOF}},
		{"closed before the first byte: reset", fasthttp.ErrConnectionClosed, conn(reset), Outcome{ClassReachedNothing, ReasonReset}},
		{"bare EOF: reset", io.EOF, conn(reset), Outcome{ClassReachedNothing, ReasonReset}},
		{"timeout, deadline seen", fasthttp.ErrTimeout, conn(deadline), Outcome{ClassReachedNothing, ReasonTimeout}},
		{"timeout before any socket error", fasthttp.ErrTimeout, nil, Outcome{ClassReachedNothing, ReasonTimeout}},
		{"pool exhausted", fasthttp.ErrNoFreeConns, nil, Outcome{ClassProbeError, ReasonLocal}},
		{"head too large", &fasthttp.ErrSmallBuffer{}, conn(nil), Outcome{ClassProbeError, ReasonLocal}},
		{"body too large", fasthttp.ErrBodyTooLarge, conn(nil), Outcome{ClassProbeError, ReasonLocal}},
		{"broken chunk after a FIN", brokenChunk, conn(io.EOF), Outcome{ClassReachedNothing, ReasonEOF}},
		{"broken chunk after a reset", brokenChunk, conn(reset), Outcome{ClassReachedNothing, ReasonReset}},
		{"unexpected EOF in a body", io.ErrUnexpectedEOF, conn(io.EOF), Outcome{ClassReachedNothing, ReasonEOF}},
		{"malformed response, socket fine", errors.New("cannot parse response status code"), conn(nil), Outcome{ClassReachedNothing, ReasonTransport}},
		{"dial refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, nil, Outcome{ClassReachedNothing, ReasonRefused}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := observedErr(tc.err, tc.c)
			if got := Classify(Observation{Err: err}); got != tc.want {
				t.Errorf("observedErr(%v) = %v: %v/%v, want %v/%v", tc.err, err, got.Class, got.Reason, tc.want.Class, tc.want.Reason)
			}
		})
	}
}

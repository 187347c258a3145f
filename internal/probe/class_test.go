package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
)

// opErr builds the error shape net/http returns for a socket failure:
// *url.Error → *net.OpError → *os.SyscallError → syscall.Errno.
func opErr(op string, errno syscall.Errno) error {
	return &url.Error{Op: "Get", URL: "http://t/", Err: &net.OpError{
		Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno),
	}}
}

func urlErr(err error) error { return &url.Error{Op: "Get", URL: "http://t/", Err: err} }

func TestClassify(t *testing.T) {
	cases := []struct {
		name string
		obs  Observation
		want Outcome
	}{
		// ok
		{"200", Observation{Status: 200, AppAnswered: true}, Outcome{ClassOK, ReasonResponse}},
		{"204 without app headers", Observation{Status: 204}, Outcome{ClassOK, ReasonResponse}},
		{"301 not followed", Observation{Status: 301}, Outcome{ClassOK, ReasonResponse}},
		{"404 from the app", Observation{Status: 404}, Outcome{ClassOK, ReasonResponse}},
		{"499 upper edge of ok", Observation{Status: 499}, Outcome{ClassOK, ReasonResponse}},
		{"200 on health path", Observation{Status: 200, HealthPath: true}, Outcome{ClassOK, ReasonResponse}},
		{"LB marker on a 200 is not LB-generated", Observation{Status: 200, LBMarker: "x"}, Outcome{ClassOK, ReasonResponse}},

		// reached nothing: LB-generated
		{"mythex LB 502 target refused", Observation{Status: 502, LBMarker: "target-refused"}, Outcome{ClassReachedNothing, ReasonLBMarked}},
		{"mythex LB 502 target reset", Observation{Status: 502, LBMarker: "target-reset"}, Outcome{ClassReachedNothing, ReasonLBMarked}},
		{"mythex LB 504 target timeout", Observation{Status: 504, LBMarker: "target-timeout"}, Outcome{ClassReachedNothing, ReasonLBMarked}},
		{"mythex LB 503 no targets", Observation{Status: 503, LBMarker: "no-targets"}, Outcome{ClassReachedNothing, ReasonLBMarked}},
		{"mythex LB 503 no targets on health path is not a drain signal", Observation{Status: 503, LBMarker: "no-targets", HealthPath: true}, Outcome{ClassReachedNothing, ReasonLBMarked}},
		{"LB marker wins over app headers", Observation{Status: 502, LBMarker: "target-reset", AppAnswered: true}, Outcome{ClassReachedNothing, ReasonLBMarked}},
		{"ALB 502", Observation{Status: 502, Server: "awselb/2.0"}, Outcome{ClassReachedNothing, ReasonALB}},
		{"ALB 503 no healthy targets on health path", Observation{Status: 503, Server: "awselb/2.0", HealthPath: true}, Outcome{ClassReachedNothing, ReasonALB}},
		{"ALB 504 server header case-insensitive", Observation{Status: 504, Server: "AWSELB/2.0"}, Outcome{ClassReachedNothing, ReasonALB}},
		{"ALB 500", Observation{Status: 500, Server: "awselb/2.0"}, Outcome{ClassReachedNothing, ReasonALB}},
		// reached nothing: a gateway that is not ours
		{"502 with no app headers", Observation{Status: 502, Server: "nginx"}, Outcome{ClassReachedNothing, ReasonGatewayNoApp}},
		{"504 with no app headers", Observation{Status: 504}, Outcome{ClassReachedNothing, ReasonGatewayNoApp}},
		{"502 with no app headers on health path", Observation{Status: 502, HealthPath: true}, Outcome{ClassReachedNothing, ReasonGatewayNoApp}},
		// reached nothing: transport errors
		{"connection refused", Observation{Err: opErr("dial", syscall.ECONNREFUSED)}, Outcome{ClassReachedNothing, ReasonRefused}},
		{"connection reset", Observation{Err: opErr("read", syscall.ECONNRESET)}, Outcome{ClassReachedNothing, ReasonReset}},
		{"broken pipe", Observation{Err: opErr("write", syscall.EPIPE)}, Outcome{ClassReachedNothing, ReasonReset}},
		{"connection aborted", Observation{Err: opErr("read", syscall.ECONNABORTED)}, Outcome{ClassReachedNothing, ReasonReset}},
		{"EOF before response", Observation{Err: urlErr(io.EOF)}, Outcome{ClassReachedNothing, ReasonEOF}},
		{"body cut short after a 200 header", Observation{Status: 200, Err: io.ErrUnexpectedEOF}, Outcome{ClassReachedNothing, ReasonEOF}},
		{"client timeout", Observation{Err: urlErr(context.DeadlineExceeded)}, Outcome{ClassReachedNothing, ReasonTimeout}},
		{"dial i/o timeout", Observation{Err: urlErr(&net.OpError{Op: "dial", Err: timeoutErr{}})}, Outcome{ClassReachedNothing, ReasonTimeout}},
		{"host unreachable", Observation{Err: opErr("dial", syscall.EHOSTUNREACH)}, Outcome{ClassReachedNothing, ReasonUnreachable}},
		{"network unreachable", Observation{Err: opErr("dial", syscall.ENETUNREACH)}, Outcome{ClassReachedNothing, ReasonUnreachable}},
		{"unknown transport error", Observation{Err: urlErr(errors.New("net/http: HTTP/1.x transport connection broken: malformed HTTP response"))}, Outcome{ClassReachedNothing, ReasonTransport}},
		// reached nothing: the keep-alive race
		{"reused connection closed before the response", Observation{Err: errClosedBeforeResponse, ReusedConn: true}, Outcome{ClassReachedNothing, ReasonReusedConnDied}},
		{"reused connection reset before the response", Observation{Err: opErr("read", syscall.ECONNRESET), ReusedConn: true}, Outcome{ClassReachedNothing, ReasonReusedConnDied}},
		{"broken pipe writing on a reused connection", Observation{Err: opErr("write", syscall.EPIPE), ReusedConn: true}, Outcome{ClassReachedNothing, ReasonReusedConnDied}},
		{"reused connection cut mid-response is EOF", Observation{Status: 200, Err: io.ErrUnexpectedEOF, ReusedConn: true, ResponseStarted: true}, Outcome{ClassReachedNothing, ReasonEOF}},
		{"reused connection reset after a partial head is a reset", Observation{Err: opErr("read", syscall.ECONNRESET), ReusedConn: true, ResponseStarted: true}, Outcome{ClassReachedNothing, ReasonReset}},
		{"timeout on a reused connection is a timeout", Observation{Err: errTimedOut, ReusedConn: true}, Outcome{ClassReachedNothing, ReasonTimeout}},
		{"fresh connection closed before the response is EOF", Observation{Err: errClosedBeforeResponse}, Outcome{ClassReachedNothing, ReasonEOF}},

		// app error
		{"500 from app", Observation{Status: 500, AppAnswered: true}, Outcome{ClassAppError, ReasonAppStatus}},
		{"500 with no app headers", Observation{Status: 500}, Outcome{ClassAppError, ReasonAppStatus}},
		{"502 from an app that answered", Observation{Status: 502, AppAnswered: true}, Outcome{ClassAppError, ReasonAppStatus}},
		{"504 from an app that answered", Observation{Status: 504, AppAnswered: true}, Outcome{ClassAppError, ReasonAppStatus}},
		{"503 off the health path", Observation{Status: 503}, Outcome{ClassAppError, ReasonAppStatus}},
		{"599", Observation{Status: 599}, Outcome{ClassAppError, ReasonAppStatus}},
		{"500 on health path is not a drain signal", Observation{Status: 500, HealthPath: true}, Outcome{ClassAppError, ReasonAppStatus}},

		// drain signal
		{"503 on health path", Observation{Status: 503, HealthPath: true}, Outcome{ClassDrainSignal, ReasonHealth503}},
		{"503 on health path with app headers", Observation{Status: 503, HealthPath: true, AppAnswered: true}, Outcome{ClassDrainSignal, ReasonHealth503}},

		// probe errors: the prober could not run
		{"fd exhaustion", Observation{Err: opErr("dial", syscall.EMFILE)}, Outcome{ClassProbeError, ReasonLocal}},
		{"system fd table full", Observation{Err: opErr("dial", syscall.ENFILE)}, Outcome{ClassProbeError, ReasonLocal}},
		{"ephemeral ports exhausted", Observation{Err: opErr("dial", syscall.EADDRNOTAVAIL)}, Outcome{ClassProbeError, ReasonLocal}},
		{"no buffer space", Observation{Err: opErr("write", syscall.ENOBUFS)}, Outcome{ClassProbeError, ReasonLocal}},
		{"name does not resolve", Observation{Err: urlErr(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "nope.invalid", IsNotFound: true}})}, Outcome{ClassProbeError, ReasonDNS}},
		{"DNS timeout is the prober's, not the target's", Observation{Err: urlErr(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "i/o timeout", IsTimeout: true}})}, Outcome{ClassProbeError, ReasonDNS}},
		{"buffers exhausted on a reused connection", Observation{Err: opErr("write", syscall.ENOBUFS), ReusedConn: true}, Outcome{ClassProbeError, ReasonLocal}},
		{"prober's own connection pool or buffer limit", Observation{Err: fmt.Errorf("%w: every connection of the pool busy", errLocalLimit)}, Outcome{ClassProbeError, ReasonLocal}},
		{"prober canceled the request", Observation{Err: urlErr(context.Canceled)}, Outcome{ClassProbeError, ReasonCanceled}},
		{"mythex LB rejected the probe request", Observation{Status: 400, LBMarker: "bad-request"}, Outcome{ClassProbeError, ReasonLBRejected}},
		{"ALB 403 fixed response", Observation{Status: 403, Server: "awselb/2.0"}, Outcome{ClassProbeError, ReasonLBRejected}},
	}
	seen := map[Class]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.obs)
			if got != tc.want {
				t.Errorf("Classify(%+v) = %v/%v, want %v/%v", tc.obs, got.Class, got.Reason, tc.want.Class, tc.want.Reason)
			}
		})
		seen[tc.want.Class] = true
	}
	for c := Class(0); c < numClasses; c++ {
		if !seen[c] {
			t.Errorf("no case covers class %v", c)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClass_String(t *testing.T) {
	want := map[Class]string{
		ClassOK: "ok", ClassReachedNothing: "reached_nothing", ClassAppError: "app_error",
		ClassDrainSignal: "drain_signal", ClassProbeError: "probe_error", Class(200): "unknown",
	}
	for c, s := range want {
		if c.String() != s {
			t.Errorf("Class(%d).String() = %q, want %q", c, c.String(), s)
		}
	}
}

func TestReason_String(t *testing.T) {
	names := map[string]Reason{}
	for r := Reason(0); r <= ReasonPanic; r++ {
		s := r.String()
		if s == "" || s == "unknown" {
			t.Errorf("Reason(%d) has no name", r)
		}
		if prev, dup := names[s]; dup {
			t.Errorf("Reason(%d) and Reason(%d) share the name %q", prev, r, s)
		}
		names[s] = r
	}
	if got := Reason(250).String(); got != "unknown" {
		t.Errorf("Reason(250).String() = %q", got)
	}
}

func BenchmarkClassify(b *testing.B) {
	obs := []Observation{
		{Status: 200, AppAnswered: true},
		{Status: 502, LBMarker: "target-refused"},
		{Status: 503, HealthPath: true},
		{Err: opErr("dial", syscall.ECONNREFUSED)},
		{Err: urlErr(context.DeadlineExceeded)},
	}
	for _, o := range obs {
		b.Run(fmt.Sprintf("%v", Classify(o).Reason), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Classify(o)
			}
		})
	}
}

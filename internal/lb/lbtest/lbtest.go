// Package lbtest runs the embedded load balancer (package lb) inside a test
// process, with the ALB's timings scaled down so that a test of a publish or
// a deploy behind it takes seconds, not minutes. It is imported only from
// _test.go files.
package lbtest

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/lb"
)

// Settings are an ALB's target-group settings scaled down for tests: a
// health check of /healthz every 250 ms (200 ms timeout), 2 checks either
// way, a 3 s deregistration delay; the idle timeout, connect timeout and
// body limit are the ALB's own.
func Settings() lb.Settings {
	return lb.Settings{HealthCheckPath: "/healthz", HealthCheckInterval: 250 * time.Millisecond, HealthCheckTimeout: 200 * time.Millisecond,
		Thresholds: lb.Thresholds{Healthy: 2, Unhealthy: 2}, DeregistrationDelay: 3 * time.Second, IdleTimeout: 60 * time.Second,
		ConnectTimeout: time.Second, MaxBodySize: lb.DefaultMaxBodySize}
}

// Start runs the embedded load balancer with Settings and the admin API
// token on two loopback listeners until the test ends (its cleanup stops
// it and waits for it). It returns the traffic address (host:port) and the
// admin API's URL (http://host:port). Failing to start fails t.
func Start(t testing.TB, token string) (traffic, adminURL string) {
	t.Helper()
	srv, err := lb.New(lb.Options{Settings: Settings(), Token: token, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	adminLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, adminLn) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String(), "http://" + adminLn.Addr().String()
}

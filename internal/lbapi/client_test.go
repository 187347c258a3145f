package lbapi_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/lb"
	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/lbport"
)

const token = "s3cret"

// newEnv is a real embedded LB's admin API with fast checks, and a backend
// that passes them.
func newEnv(t *testing.T) (admin, backend string) {
	t.Helper()
	be := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(be.Close)
	srv, err := lb.New(lb.Options{Token: token, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Settings: lb.Settings{
		HealthCheckPath: "/healthz", HealthCheckInterval: 50 * time.Millisecond, HealthCheckTimeout: 25 * time.Millisecond,
		Thresholds: lb.Thresholds{Healthy: 2, Unhealthy: 2}, DeregistrationDelay: time.Second, IdleTimeout: time.Minute,
		ConnectTimeout: time.Second, MaxBodySize: lb.DefaultMaxBodySize}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Group.Close)
	ts := httptest.NewServer(srv.Admin())
	t.Cleanup(ts.Close)
	return ts.URL, strings.TrimPrefix(be.URL, "http://")
}

func TestClient_RegisterListDeregister(t *testing.T) {
	admin, addr := newEnv(t)
	c := lbapi.NewClient(admin, token, nil)
	ctx := context.Background()
	st, err := c.Register(ctx, "a", addr)
	if err != nil || st.ID != "a" || st.State != lbport.StateInitial {
		t.Fatalf("Register = %+v, %v; want a initial", st, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err = c.Target(ctx, "a")
		if err == nil && st.State == lbport.StateHealthy && st.InRotation && len(st.LastChecks) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Target = %+v, %v; want healthy in rotation with checks", st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	list, err := c.Targets(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "a" {
		t.Fatalf("Targets = %+v, %v; want [a]", list, err)
	}
	if _, err := c.Deregister(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitOutOfRotation(ctx, "a", 5*time.Millisecond); err != nil {
		t.Fatalf("WaitOutOfRotation: %v", err)
	}
}

func TestClient_Errors(t *testing.T) {
	admin, addr := newEnv(t)
	c := lbapi.NewClient(admin, token, nil)
	ctx := context.Background()
	if _, err := c.Register(ctx, "a", addr); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"unknown target", func() error { _, err := c.Target(ctx, "zz"); return err }, lbapi.ErrTargetNotFound},
		{"deregister unknown", func() error { _, err := c.Deregister(ctx, "zz"); return err }, lbapi.ErrTargetNotFound},
		{"bad address", func() error { _, err := c.Register(ctx, "b", "nowhere"); return err }, lbapi.ErrInvalidTarget},
		{"conflict", func() error { _, err := c.Register(ctx, "a", "127.0.0.1:1"); return err }, lbapi.ErrTargetConflict},
		{"wrong token", func() error { _, err := lbapi.NewClient(admin, "nope", nil).Targets(ctx); return err }, lbapi.ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			var apiErr *lbapi.APIError
			if !errors.As(err, &apiErr) || apiErr.Message == "" {
				t.Fatalf("err = %v, want an *APIError with the API's message", err)
			}
		})
	}
}

func TestClient_WaitOutOfRotationHonoursContext(t *testing.T) {
	admin, addr := newEnv(t)
	c := lbapi.NewClient(admin, token, nil)
	if _, err := c.Register(context.Background(), "a", addr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.WaitOutOfRotation(ctx, "a", 5*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitOutOfRotation on a registered target = %v, want the context's deadline", err)
	}
}

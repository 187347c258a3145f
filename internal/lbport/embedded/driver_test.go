package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/lb"
	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/lbport"
)

// fakeAdmin answers the embedded LB's admin API from a fixed target list.
func fakeAdmin(t *testing.T, targets []lbapi.TargetStatus) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/targets", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(lbapi.TargetList{Targets: targets})
	})
	mux.HandleFunc("GET /v1/targets/{id}", func(w http.ResponseWriter, r *http.Request) {
		for _, st := range targets {
			if st.ID == r.PathValue("id") {
				_ = json.NewEncoder(w).Encode(st)
				return
			}
		}
		http.Error(w, `{"error":"no such target"}`, http.StatusNotFound)
	})
	mux.HandleFunc("DELETE /v1/targets/{id}", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"no such target"}`, http.StatusNotFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestDriver_Describe(t *testing.T) {
	d := New(lbapi.NewClient(fakeAdmin(t, []lbapi.TargetStatus{
		{ID: "web-1", Address: "127.0.0.1:1", State: lbport.StateHealthy, InRotation: true, InFlight: 3},
		{ID: "web-2", Address: "127.0.0.1:2", State: lbport.StateDraining, Reason: lbport.ReasonDeregistrationInProgress},
	}), "tok", nil))
	ctx := context.Background()
	got, err := d.Describe(ctx, lbport.TargetRef{ID: "web-2"}, lbport.TargetRef{ID: "web-9"}, lbport.TargetRef{ID: "web-1"})
	if err != nil {
		t.Fatal(err)
	}
	want := []lbport.Target{
		{ID: "web-2", Address: "127.0.0.1:2", State: lbport.StateDraining, Reason: lbport.ReasonDeregistrationInProgress},
		{ID: "web-9", State: lbport.StateUnused, Reason: lbport.ReasonNotRegistered},
		{ID: "web-1", Address: "127.0.0.1:1", State: lbport.StateHealthy, InRotation: true, InFlight: 3},
	}
	if len(got) != len(want) {
		t.Fatalf("Describe = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("target %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	one, err := lbport.Describe1(ctx, d, lbport.TargetRef{ID: "web-9"})
	if err != nil || one.Registered() || one.Reason != lbport.ReasonNotRegistered {
		t.Fatalf("Describe1(unknown) = %+v, %v; want unused Target.NotRegistered", one, err)
	}
	if err := d.Deregister(ctx, lbport.TargetRef{ID: "web-9"}); err != nil {
		t.Fatalf("Deregister(unknown) = %v, want nil as in ELBv2", err)
	}
}

func TestDriver_Unauthorized(t *testing.T) {
	d := New(lbapi.NewClient(fakeAdmin(t, nil), "wrong", nil))
	_, err := d.Describe(context.Background(), lbport.TargetRef{ID: "a"}, lbport.TargetRef{ID: "b"})
	if !errors.Is(err, lbport.ErrUnauthorized) || lbport.IsTransient(err) {
		t.Fatalf("Describe with a wrong token = %v; want ErrUnauthorized, not transient", err)
	}
}

// lbStand is a real embedded LB's admin API on an httptest server.
func lbStand(t *testing.T, s lb.Settings) (*lb.Server, string) {
	t.Helper()
	srv, err := lb.New(lb.Options{Settings: s, Token: "tok", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Group.Close)
	admin := httptest.NewServer(srv.Admin())
	t.Cleanup(admin.Close)
	return srv, admin.URL
}

func standSettings() lb.Settings {
	return lb.Settings{HealthCheckPath: "/healthz", HealthCheckInterval: 5 * time.Second, HealthCheckTimeout: 2 * time.Second,
		Thresholds: lb.Thresholds{Healthy: 2, Unhealthy: 2}, DeregistrationDelay: 30 * time.Second, IdleTimeout: time.Minute,
		ConnectTimeout: time.Second, Algorithm: lb.RoundRobin, MaxBodySize: lb.DefaultMaxBodySize}
}

// check --live and lb apply work on kind embedded: its settings are read
// and set through its admin API, and settings it refuses change nothing.
func TestDriver_SettingsAndApply(t *testing.T) {
	srv, url := lbStand(t, standSettings())
	d := New(lbapi.NewClient(url, "tok", nil))
	ctx := context.Background()

	got, err := d.Settings(ctx)
	want := lbport.Settings{HealthCheck: lbport.HealthCheck{Path: "/healthz", Interval: 5 * time.Second, Timeout: 2 * time.Second,
		HealthyThreshold: 2, UnhealthyThreshold: 2}, DeregistrationDelay: 30 * time.Second, Algorithm: "round_robin"}
	if err != nil || got != want {
		t.Fatalf("Settings = %+v, %v; want %+v", got, err, want)
	}

	next := want
	next.HealthCheck.Interval, next.HealthCheck.Timeout, next.HealthCheck.Path = 1500*time.Millisecond, 500*time.Millisecond, "/up"
	next.DeregistrationDelay, next.Algorithm = 0, "least_outstanding_requests"
	if err := d.Apply(ctx, next); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got, err := d.Settings(ctx); err != nil || got != next {
		t.Fatalf("after Apply: %+v, %v; want %+v", got, err, next)
	}
	if s := srv.Group.Settings(); s.HealthCheckInterval != 1500*time.Millisecond || s.Algorithm != lb.LeastOutstandingRequests || s.DeregistrationDelay != 0 {
		t.Fatalf("the LB's own settings after Apply: %+v", s)
	}
	keep := next
	keep.Algorithm, keep.HealthCheck.HealthyThreshold = "", 3 // the load balancer does not tell: keep the live one
	if err := d.Apply(ctx, keep); err != nil {
		t.Fatalf("Apply without an algorithm: %v", err)
	}
	if s := srv.Group.Settings(); s.Algorithm != lb.LeastOutstandingRequests || s.Thresholds.Healthy != 3 {
		t.Fatalf("after Apply without an algorithm: %+v", s)
	}

	before := srv.Group.Settings()
	refusals := []struct {
		name string
		s    func(lbport.Settings) lbport.Settings
		want error
	}{
		{"timeout not under the interval", func(s lbport.Settings) lbport.Settings { s.HealthCheck.Timeout = s.HealthCheck.Interval; return s }, lbport.ErrInvalidSettings},
		{"no healthy threshold", func(s lbport.Settings) lbport.Settings { s.HealthCheck.HealthyThreshold = 0; return s }, lbport.ErrInvalidSettings},
		{"slow start", func(s lbport.Settings) lbport.Settings { s.SlowStart = 30 * time.Second; return s }, lbport.ErrUnsupported},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			err := d.Apply(ctx, tc.s(want))
			if !errors.Is(err, tc.want) || lbport.IsTransient(err) {
				t.Fatalf("Apply = %v, want %v, not transient", err, tc.want)
			}
			if s := srv.Group.Settings(); s != before {
				t.Fatalf("a refused Apply changed the LB: %+v", s)
			}
		})
	}

	wrong := New(lbapi.NewClient(url, "wrong", nil))
	if _, err := wrong.Settings(ctx); !errors.Is(err, lbport.ErrUnauthorized) {
		t.Fatalf("Settings with a wrong token = %v, want ErrUnauthorized", err)
	}
	if err := wrong.Apply(ctx, want); !errors.Is(err, lbport.ErrUnauthorized) || srv.Group.Settings() != before {
		t.Fatalf("Apply with a wrong token = %v (settings %+v), want ErrUnauthorized and nothing changed", err, srv.Group.Settings())
	}
}

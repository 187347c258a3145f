package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

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

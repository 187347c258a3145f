package agentapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/history"
)

// TestClient_Errors checks how an agent's answer (or its absence) becomes
// this package's errors.
func TestClient_Errors(t *testing.T) {
	tests := []struct {
		name    string
		status  int    // the agent's answer; 0: no agent listens
		body    string // its body
		cancel  bool   // the call's context ends while the agent holds the request
		wantIs  error
		wantMsg string // the error's text holds it
	}{
		{"401 refused token", 401, `{"error":"bad token"}`, false, agentapi.ErrUnauthorized, "agent refused the token: bad token"},
		{"409 lease held", 409, `{"error":"held by bob"}`, false, agentapi.ErrLeaseHeld, "lease held: held by bob"},
		{"412 no lease", 412, "gone\n", false, agentapi.ErrNoLease, "no such lease: gone"},
		{"400 bad request", 400, `{"error":"bad ttl"}`, false, agentapi.ErrBadRequest, "bad ttl"},
		{"422 bad request", 422, `{"error":"bad def"}`, false, agentapi.ErrBadRequest, "bad def"},
		{"404 not found", 404, "404 page not found", false, agentapi.ErrNotFound, "not found on the agent: 404 page not found"},
		{"500 other status", 500, "boom", false, nil, "agent answered 500 Internal Server Error: boom"},
		{"nothing listens", 0, "", false, agentapi.ErrUnreachable, "agent unreachable: GET http://"},
		{"context cancelled", 200, "{}", true, context.Canceled, "agent GET http://"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.cancel {
					cancel()
					<-r.Context().Done()
					return
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			if tc.status == 0 {
				srv.Close()
			} else {
				defer srv.Close()
			}
			_, err := agentapi.NewClient(srv.URL, "tok", nil).Status(ctx)
			if err == nil || (tc.wantIs != nil && !errors.Is(err, tc.wantIs)) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("Status = %v; want %v with %q", err, tc.wantIs, tc.wantMsg)
			}
			if tc.cancel && errors.Is(err, agentapi.ErrUnreachable) {
				t.Errorf("Status = %v; a cancelled call is not an unreachable agent", err)
			}
		})
	}
}

// TestClient_LeaseAndTimeline checks the lease header of a mutating call and
// the bound on a raw timeline answer.
func TestClient_LeaseAndTimeline(t *testing.T) {
	leases := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			leases <- r.Header.Get(agentapi.HeaderLease)
			return
		}
		_, _ = w.Write([]byte(strings.Repeat("t", history.MaxTimeline+10)))
	}))
	defer srv.Close()
	c := agentapi.NewClient(strings.TrimPrefix(srv.URL, "http://")+"/", "tok", nil)
	if c.Base() != srv.URL {
		t.Errorf("Base() = %q; want %q", c.Base(), srv.URL)
	}
	if err := c.MarkGood(context.Background(), "L1"); err != nil {
		t.Fatal(err)
	}
	if got := <-leases; got != "L1" {
		t.Errorf("lease header = %q; want L1", got)
	}
	tl, err := c.Timeline(context.Background(), "d1")
	if err != nil || len(tl) != history.MaxTimeline+1 {
		t.Fatalf("Timeline = %d bytes, %v; want MaxTimeline+1 bytes", len(tl), err)
	}
}

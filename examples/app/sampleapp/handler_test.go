package sampleapp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mythex/mythex/internal/wire"
)

func TestServiceHandler(t *testing.T) {
	c := config{Service: "api", Version: "v2", HostName: "web-1"}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		rec := httptest.NewRecorder()
		serviceHandler(c).ServeHTTP(rec, httptest.NewRequest(method, "/any/path", nil))
		if rec.Code != http.StatusOK || rec.Body.String() != "service=api version=v2 host=web-1\n" {
			t.Errorf("%s = %d %q", method, rec.Code, rec.Body)
		}
		for h, want := range map[string]string{wire.HeaderService: "api", wire.HeaderVersion: "v2", wire.HeaderHost: "web-1"} {
			if got := rec.Header().Get(h); got != want {
				t.Errorf("%s: header %s = %q, want %q", method, h, got, want)
			}
		}
	}
}

func TestServiceHandler_Latency(t *testing.T) {
	const latency = 750 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		h := serviceHandler(config{Service: "api", Version: "v2", HostName: "web-1", Latency: latency})

		start := time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if took := time.Since(start); took != latency || rec.Code != http.StatusOK {
			t.Errorf("answered %d after %s, want 200 after %s", rec.Code, took, latency)
		}

		// A client that gives up stops the wait and gets nothing.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start = time.Now()
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
		if took := time.Since(start); took != 100*time.Millisecond || rec.Body.Len() != 0 {
			t.Errorf("cancelled request returned after %s with %q, want after 100ms with nothing", took, rec.Body)
		}
	})
}

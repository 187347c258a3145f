package drain

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

func TestServer_Handler(t *testing.T) {
	errWarming := errors.New("cache warming")
	tests := []struct {
		name       string
		ready      func(context.Context) error
		draining   bool
		method     string
		path       string
		wantStatus int
		wantBody   string
		wantClose  bool
	}{
		{"health serving", nil, false, http.MethodGet, "/healthz", 200, "ok", false},
		{"health ready", func(context.Context) error { return nil }, false, http.MethodGet, "/healthz", 200, "ok", false},
		{"health not ready", func(context.Context) error { return errWarming }, false, http.MethodGet, "/healthz", 503, "not ready: cache warming", false},
		{"health draining", nil, true, http.MethodGet, "/healthz", 503, "draining", true},
		{"health draining wins over ready", func(context.Context) error { return nil }, true, http.MethodGet, "/healthz", 503, "draining", true},
		{"app serving", nil, false, http.MethodGet, "/orders", 200, "app", false},
		{"app draining", nil, true, http.MethodPost, "/orders", 200, "app", true},
		{"app not ready still served", func(context.Context) error { return errWarming }, false, http.MethodGet, "/", 200, "app", false},
		{"health path prefix is the app's", nil, true, http.MethodGet, "/healthz/deep", 200, "app", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("app")) })
			srv := &http.Server{Handler: app}
			d, err := New(srv, Config{Ready: tt.ready, NoSignals: true, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			if tt.draining {
				d.Drain()
			}
			rec := httptest.NewRecorder()
			srv.Handler.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.wantStatus || rec.Body.String() != tt.wantBody {
				t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, rec.Code, rec.Body, tt.wantStatus, tt.wantBody)
			}
			if got := rec.Header().Get("Connection") == "close"; got != tt.wantClose {
				t.Errorf("Connection: close = %v, want %v", got, tt.wantClose)
			}
		})
	}
}

// registerOnDefaultMux registers the test's handler on http.DefaultServeMux
// once per process (-count=N runs the test N times).
var registerOnDefaultMux sync.Once

func TestNew_NilHandlerIsDefaultServeMux(t *testing.T) {
	const path = "/drain-test-default-mux"
	registerOnDefaultMux.Do(func() {
		http.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("mux")) })
	})
	srv := &http.Server{}
	if _, err := New(srv, Config{NoSignals: true, Logger: discardLogger()}); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Body.String() != "mux" {
		t.Errorf("GET %s = %q, want the DefaultServeMux handler's \"mux\"", path, rec.Body)
	}
}

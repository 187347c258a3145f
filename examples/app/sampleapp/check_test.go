package sampleapp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	handler := func(status int, block bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if block {
				<-r.Context().Done()
				return
			}
			w.WriteHeader(status)
		}
	}
	closed := func() string { // a URL on a port nothing listens on
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr + "/healthz"
	}
	tests := []struct {
		name    string
		h       http.HandlerFunc // nil: nothing listens
		wantErr error            // nil: passes
		wantMsg string
	}{
		{"200 passes", handler(200, false), nil, ""},
		{"503 fails", handler(503, false), errNotOK, "503 Service Unavailable"},
		{"204 fails", handler(204, false), errNotOK, "204"},
		{"too slow fails", handler(0, true), context.DeadlineExceeded, ""},
		{"nothing listening fails", nil, syscall.ECONNREFUSED, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := ""
			if tt.h != nil {
				ts := httptest.NewServer(tt.h)
				t.Cleanup(ts.Close)
				url = ts.URL + "/healthz"
			} else {
				url = closed()
			}
			err := check(context.Background(), http.DefaultClient, url, 200*time.Millisecond)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("check = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("check = %v, want %v mentioning %q", err, tt.wantErr, tt.wantMsg)
			}
		})
	}
}

func TestRunCheck_Usage(t *testing.T) {
	for name, args := range map[string][]string{
		"no URL":    nil,
		"two URLs":  {"http://a", "http://b"},
		"flag only": {"--timeout"},
	} {
		t.Run(name, func(t *testing.T) {
			var stderr strings.Builder
			if code := runCheck(context.Background(), args, &stderr); code != exitUsage {
				t.Errorf("runCheck(%q) = %d, want %d", args, code, exitUsage)
			}
			if !strings.Contains(stderr.String(), "usage: app check URL") {
				t.Errorf("stderr %q lacks the usage", stderr.String())
			}
		})
	}
}

func TestRunCheck_ExitCodes(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(ok.Close)
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	t.Cleanup(bad.Close)
	if code := runCheck(context.Background(), []string{ok.URL}, io.Discard); code != exitOK {
		t.Errorf("check of a 200 = %d, want 0", code)
	}
	var stderr strings.Builder
	if code := runCheck(context.Background(), []string{bad.URL}, &stderr); code != exitFailure {
		t.Errorf("check of a 503 = %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "503") {
		t.Errorf("stderr %q does not say why", stderr.String())
	}
}

package publish

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestHTTPChecker_Check(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.Write([]byte("ok"))
		case "/draining":
			http.Error(w, "draining", http.StatusServiceUnavailable)
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}
	}))
	defer srv.Close()
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/healthz"
	l.Close()

	tests := []struct {
		name      string
		url       string
		ok        bool
		status    int
		errSubstr string
	}{
		{"healthy", srv.URL + "/healthz", true, 200, ""},
		{"503 draining", srv.URL + "/draining", false, 503, ""},
		{"refused", closed, false, 0, "connection refused"},
		{"timeout", srv.URL + "/slow", false, 0, "timeout"},
	}
	c := HTTPChecker{Timeout: 200 * time.Millisecond}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := c.Check(context.Background(), tt.url)
			if !p.Ran || p.OK != tt.ok || p.Status != tt.status || (tt.errSubstr != "" && p.Error != tt.errSubstr) {
				t.Errorf("Check(%s) = %+v, want ok=%v status=%d error=%q", tt.url, p, tt.ok, tt.status, tt.errSubstr)
			}
			if p.Target != tt.url {
				t.Errorf("Target = %q, want %q", p.Target, tt.url)
			}
		})
	}
}

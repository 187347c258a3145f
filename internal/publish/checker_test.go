package publish

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/freeport"
)

func TestHTTPChecker_Check(t *testing.T) {
	t.Parallel() // its own test server
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
	// A port nothing listens on: claimed against every other test process
	// and below the kernel's ephemeral range (freeport), so no other
	// process's bind to port 0 can take it and answer.
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/healthz"

	// The answers get a long timeout: with tests running in parallel on a
	// busy machine, a loopback answer can take longer than the 200 ms the
	// timeout case waits for one that never comes.
	const answered, unanswered = 10 * time.Second, 200 * time.Millisecond
	tests := []struct {
		name      string
		url       string
		timeout   time.Duration
		ok        bool
		status    int
		errSubstr string
	}{
		{"healthy", srv.URL + "/healthz", answered, true, 200, ""},
		{"503 draining", srv.URL + "/draining", answered, false, 503, ""},
		{"refused", closed, answered, false, 0, "connection refused"},
		{"timeout", srv.URL + "/slow", unanswered, false, 0, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := HTTPChecker{Timeout: tt.timeout}
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

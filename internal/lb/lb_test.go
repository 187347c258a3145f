package lb

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/testkit"
)

func TestNew_Errors(t *testing.T) {
	bad := testSettings()
	bad.HealthCheckTimeout = bad.HealthCheckInterval
	if _, err := New(Options{Settings: bad, Token: "t"}); !errors.Is(err, fleet.ErrInvalid) {
		t.Fatalf("New with bad settings = %v, want fleet.ErrInvalid", err)
	}
	if _, err := New(Options{Settings: testSettings()}); err == nil {
		t.Fatal("New without a token: no error")
	}
}

func TestServer_LogsStateChangesNotRequestsAndShutsDownCleanly(t *testing.T) {
	var logs testkit.SyncBuffer
	srv, err := New(Options{Settings: testSettings(), Token: "t", HealthChecker: newFakeChecker(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), ShutdownTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	aln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, aln) }()

	addr := backendAddr(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	if _, err := srv.Group.Register("web-1", addr); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "web-1 healthy", func() bool { st, _ := srv.Group.Target("web-1"); return st.State == StateHealthy })
	client := &http.Client{Timeout: waitFor}
	for range 20 {
		resp, err := client.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after cancel = %v, want nil", err)
		}
	case <-time.After(waitFor):
		t.Fatal("Serve did not return after its context ended")
	}
	out := logs.String()
	for _, want := range []string{"from=unused to=initial", "from=initial to=healthy", "target=web-1"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n > 6 {
		t.Errorf("%d log lines for 20 requests and 2 state changes; requests must not be logged:\n%s", n, out)
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("the traffic listener still accepts after shutdown")
	}
}

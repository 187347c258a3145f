package drain_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/mythex/mythex/drain"
)

// A service behind a load balancer that checks /healthz every 5s, marks a
// target unhealthy after 2 failures with a 2s timeout (detection 12s), has an
// idle timeout of 60s, and a supervisor that waits 30s between SIGTERM and
// SIGKILL. `mythex check` verifies these relations from the fleet's mythex.yml.
func Example() {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	srv := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	d, err := drain.New(srv, drain.Config{
		HealthPath:      "/healthz",
		ServePeriod:     15 * time.Second, // > 5s × 2 + 2s detection
		ShutdownTimeout: 10 * time.Second, // 15s + 10s ≤ 30s stop grace period
		IdleTimeout:     75 * time.Second, // > the LB's 60s idle timeout
	})
	if err != nil {
		log.Fatal(err)
	}
	// Serves until SIGTERM, then drains; returns when the drain is over.
	if err := d.ListenAndServe(context.Background()); err != nil {
		log.Fatal(err)
	}
}

// Drain can also be started by a call, e.g. from an admin endpoint; here on a
// loopback listener with a short serve period.
func ExampleServer_Drain() {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello")
	})}
	d, err := drain.New(srv, drain.Config{
		ServePeriod: time.Second,
		NoSignals:   true,
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(context.Background(), ln) }()

	get := func(path string) {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			fmt.Println(path, "error")
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Printf("%-8s %d %-8s Connection: close=%v\n", path, resp.StatusCode, body, resp.Close)
	}
	get("/healthz")
	get("/")
	d.Drain()
	fmt.Println("draining:", d.Draining())
	get("/healthz")
	get("/")
	fmt.Println("Serve returned:", <-served)
	get("/")
	// Output:
	// /healthz 200 ok       Connection: close=false
	// /        200 hello    Connection: close=false
	// draining: true
	// /healthz 503 draining Connection: close=true
	// /        200 hello    Connection: close=true
	// Serve returned: <nil>
	// / error
}

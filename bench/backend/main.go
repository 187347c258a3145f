// Command backend is the benchmark's target: a net/http server answering every
// path with the 13-byte body "Hello, World!" (health checks included), so
// bench/lb.sh measures the proxies, not the app.
package main

import (
	"flag"
	"log"
	"net/http"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9201", "address to serve on")
	idle := flag.Duration("idle-timeout", 120*time.Second, "keep-alive idle timeout (keep it above the proxies' idle timeout)")
	flag.Parse()
	body := []byte("Hello, World!")
	srv := &http.Server{
		Addr:        *listen,
		IdleTimeout: *idle,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write(body)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	log.Fatal(srv.ListenAndServe())
}

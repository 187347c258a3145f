// Command probe-backend is the small local HTTP backend bench/probe.sh
// measures mythex measure against: it answers every request 200 with a short
// body and the sample app's version and host headers. It prints the address
// it listens on as its first line of stdout.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/mythex/mythex/internal/wire"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (port 0: any free port)")
	version := flag.String("version", "bench", "value of the X-Mythex-Version header")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	host, _ := os.Hostname()
	fmt.Println(ln.Addr().String())
	body := []byte("ok\n")
	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       120 * time.Second, // longer than the prober's 30 s idle timeout
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			h := w.Header()
			h.Set(wire.HeaderVersion, *version)
			h.Set(wire.HeaderHost, host)
			_, _ = w.Write(body)
		}),
	}
	log.Fatal(srv.Serve(ln))
}

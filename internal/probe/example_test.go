package probe_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/mythex/mythex/internal/probe"
)

// Probe a service while something else runs (here: nothing but a short
// wait), then read the report.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Mythex-Version", "v2")
		fmt.Fprintln(w, "ok")
	}))
	defer srv.Close()

	p, err := probe.New(probe.Config{URL: srv.URL, Rate: 20, Duration: time.Second}, probe.Deps{
		OnBucket: func(b probe.Bucket) {
			fmt.Printf("second %d: %d ok, %d reached nothing\n", b.Second, b.OK, b.ReachedNothing)
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	<-p.Done() // or: run a deploy, then Stop
	r := p.Stop()
	fmt.Printf("%d requests: %d ok, %d reached nothing; versions %v\n", r.Requests, r.OK, r.ReachedNothing, r.Versions)
	// Output:
	// second 0: 20 ok, 0 reached nothing
	// 20 requests: 20 ok, 0 reached nothing; versions map[v2:20]
}

package sampleapp

import (
	"fmt"
	"net/http"
	"time"

	"github.com/mythex/mythex/internal/wire"
)

// serviceHandler answers every request (the health path never reaches it:
// package drain answers that) with 200 and who answered: body
// "service=<s> version=<v> host=<h>\n" and the X-Mythex-* headers. With a
// latency it waits that long first; a request whose client gives up stops
// waiting and gets nothing.
func serviceHandler(c config) http.Handler {
	body := fmt.Sprintf("service=%s version=%s host=%s\n", c.Service, c.Version, c.HostName)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.Latency > 0 {
			t := time.NewTimer(c.Latency)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		h := w.Header()
		h.Set(wire.HeaderService, c.Service)
		h.Set(wire.HeaderVersion, c.Version)
		h.Set(wire.HeaderHost, c.HostName)
		h.Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(body))
	})
}

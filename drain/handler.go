package drain

import (
	"net/http"
)

// Health endpoint bodies.
const (
	bodyOK       = "ok"
	bodyDraining = "draining"
)

// handler answers the health endpoint itself and passes every other request to
// next; once draining, every response (health or not) carries "Connection:
// close", so HTTP/1 connections close after it and HTTP/2 connections get a
// GOAWAY (net/http treats the header that way for both).
func (s *Server) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		draining := s.draining.Load()
		if draining {
			w.Header().Set("Connection", "close")
		}
		if r.URL.Path == s.cfg.HealthPath {
			s.health(w, r, draining)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// health answers the health endpoint: 503 "draining" once draining, 503 with
// the readiness error when Ready fails, else 200 "ok".
func (s *Server) health(w http.ResponseWriter, r *http.Request, draining bool) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	switch {
	case draining:
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(bodyDraining))
	case s.cfg.Ready != nil:
		if err := s.cfg.Ready(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + err.Error()))
			return
		}
		fallthrough
	default:
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(bodyOK))
	}
}

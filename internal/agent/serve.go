package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ServeOptions say how ListenAndServe serves the agent's API.
type ServeOptions struct {
	// Addr is the API's listen address (host:port).
	Addr string
	// Token is the bearer token every request needs.
	Token string
	// TLS, when set, serves TLS with it (client certificates); else plain
	// HTTP.
	TLS *tls.Config
	// Bootstrap makes the current definition run once the API listens
	// (Bootstrap); a failed bootstrap is logged and the agent keeps serving,
	// so a deploy can fix the host and the watchdog keeps trying.
	Bootstrap bool
}

// serveShutdownTimeout bounds the API's graceful shutdown.
const serveShutdownTimeout = 5 * time.Second

// ListenAndServe serves the agent's API on o.Addr until ctx ends, then shuts
// the API down gracefully (services keep running). Errors: the address
// cannot be bound, or the server fails while serving.
func (a *Agent) ListenAndServe(ctx context.Context, o ServeOptions) error {
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("agent API: %w", err)
	}
	srv := &http.Server{Handler: a.Handler(o.Token), ReadHeaderTimeout: 10 * time.Second, TLSConfig: o.TLS}
	if o.TLS != nil {
		ln = tls.NewListener(ln, o.TLS)
	}
	a.log.Info("agent listening", "addr", ln.Addr().String(), "host", a.cfg.Host, "state_dir", a.cfg.StateDir, "runtime", a.cfg.RuntimeName)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if w := a.cfg.Watchdog; w != nil {
		a.log.Info("watchdog on", "interval", w.Interval, "failures_before_heal", w.FailuresBeforeHeal)
	}
	if o.Bootstrap {
		if rep, err := a.Bootstrap(ctx); errors.Is(err, ErrNothingPublished) {
			a.log.Info("bootstrap: nothing published to this host yet; nothing to start")
		} else if err != nil {
			a.log.Error("bootstrap", "err", err)
		} else {
			a.log.Info("bootstrap: the current definition runs", "services", len(rep.Services))
		}
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		return fmt.Errorf("agent API: %w", err)
	}
	a.log.Info("agent stopping")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), serveShutdownTimeout)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	return nil
}

package drain

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Errors returned by [Server.Serve] and [Server.ListenAndServe]; compare with
// errors.Is.
var (
	// ErrShutdownTimeout: in-flight requests were still running when the
	// shutdown timeout ran out; their connections were closed.
	ErrShutdownTimeout = errors.New("drain: shutdown timeout ran out; in-flight requests were cut")
	// ErrStopped: a repeated signal stopped the server before in-flight
	// requests finished; their connections were closed.
	ErrStopped = errors.New("drain: stopped by a repeated signal; in-flight requests were cut")
	// ErrAlreadyServing: Serve or ListenAndServe was called a second time. A
	// Server serves once; make a new one (around a new http.Server) to serve
	// again.
	ErrAlreadyServing = errors.New("drain: Serve was already called on this Server")
	// ErrServeStopped: the http.Server stopped serving on its own (a listener
	// error, or someone called its Shutdown or Close directly) before the serve
	// period ended. The underlying error is wrapped too.
	ErrServeStopped = errors.New("drain: the server stopped serving on its own")
)

// Server drains one http.Server. Make it with [New]; its methods are safe for
// concurrent use. Don't call Shutdown, Close or SetKeepAlivesEnabled on the
// wrapped http.Server yourself: Server owns its lifecycle from New on.
type Server struct {
	srv *http.Server
	cfg Config

	// subscribe starts delivery of the configured signals; the test hook.
	subscribe func(sigs []os.Signal) (<-chan os.Signal, func())

	serving   atomic.Bool
	draining  atomic.Bool
	servingCh chan struct{} // closed once Serve handles signals and accepts
	done      chan struct{}

	drainOnce  sync.Once
	drainStart time.Time     // written once, before drainCh closes
	drainCh    chan struct{} // closed when the drain starts

	skipOnce sync.Once
	skipCh   chan struct{} // closed to end the serve period early

	stopCtx context.Context // cancelled to cut the shutdown short
	stop    context.CancelFunc

	conns connTracker
}

// New wraps srv so that it drains as cfg says. It applies cfg's defaults,
// replaces srv.Handler with a handler that answers cfg.HealthPath and adds
// "Connection: close" to every response once draining (a nil srv.Handler means
// http.DefaultServeMux, as in net/http), sets srv.IdleTimeout to
// cfg.IdleTimeout, and chains a hook in front of srv.ConnState (which still
// gets every call) to know which connections have requests in flight. It
// returns an error wrapping [ErrInvalidConfig] (naming the
// field and the fix) when cfg is out of range, and leaves srv untouched then.
// Finish configuring srv (Handler, timeouts, ConnState) before calling New: a
// Handler set afterwards bypasses the health endpoint and "Connection: close".
func New(srv *http.Server, cfg Config) (*Server, error) {
	if srv == nil {
		return nil, fmt.Errorf("%w: srv is nil; pass the *http.Server to drain", ErrInvalidConfig)
	}
	c, err := cfg.withDefaults(srv.IdleTimeout)
	if err != nil {
		return nil, err
	}
	s := &Server{
		srv:       srv,
		cfg:       c,
		subscribe: notifySignals,
		servingCh: make(chan struct{}),
		done:      make(chan struct{}),
		drainCh:   make(chan struct{}),
		skipCh:    make(chan struct{}),
	}
	s.stopCtx, s.stop = context.WithCancel(context.Background())
	next := srv.Handler
	if next == nil {
		next = http.DefaultServeMux
	}
	srv.Handler = s.handler(next)
	srv.IdleTimeout = c.IdleTimeout
	srv.ConnState = s.conns.hook(srv.ConnState)
	return s, nil
}

// Config returns the configuration in force, with every default applied.
func (s *Server) Config() Config { return s.cfg }

// Drain starts the drain: from now on the health endpoint answers 503 and every
// response carries "Connection: close"; the serve period is counted from this
// call. It returns at once and may be called any number of times, before or
// during Serve; only the first call counts. Serve returns once the serve period
// and the shutdown are over.
func (s *Server) Drain() { s.begin("Drain called") }

// Draining reports whether the drain has started.
func (s *Server) Draining() bool { return s.draining.Load() }

// Serving returns a channel closed once Serve handles the configured signals
// and has handed its listener to http.Server.Serve: announce readiness ("listening
// on …") after it, so that a supervisor reacting to that announcement with
// SIGTERM gets a drain, not the signal's default effect. It is never closed if
// Serve is never called.
func (s *Server) Serving() <-chan struct{} { return s.servingCh }

// Done returns a channel closed when Serve (or ListenAndServe) has returned:
// the drain and shutdown are over, or serving failed. It is never closed if
// Serve is never called.
func (s *Server) Done() <-chan struct{} { return s.done }

// ListenAndServe listens on the TCP address srv.Addr (":http" when empty) and
// calls [Server.Serve]. A listen error is returned wrapped, before anything is
// served. For TLS, wrap a listener with crypto/tls and call Serve.
func (s *Server) ListenAndServe(ctx context.Context) error {
	addr := s.srv.Addr
	if addr == "" {
		addr = ":http"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("drain: listen on %s: %w", addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves HTTP on ln until the drain has run its course, and returns then.
//
// The drain starts on the first configured signal, on [Server.Drain], or when
// ctx is cancelled (ctx only starts the drain; it never cuts it short). Then
// ln keeps accepting and requests keep being served for the serve period, after
// which http.Server.Shutdown closes ln and idle connections and waits for
// in-flight requests up to the shutdown timeout.
//
// It returns nil when every in-flight request finished in time;
// [ErrShutdownTimeout] or [ErrStopped] (wrapped) when some were cut;
// [ErrServeStopped] wrapping the cause when the http.Server stopped serving on
// its own (e.g. ln failed; the drain starts then and the serve period is
// skipped, as nothing is accepted any more, but in-flight requests still get
// the shutdown timeout);
// [ErrAlreadyServing] on a second call. Serve takes ownership of ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if !s.serving.CompareAndSwap(false, true) {
		return ErrAlreadyServing
	}
	defer close(s.done)
	log := s.cfg.Logger

	// Subscribe before accepting: a SIGTERM that arrives once the first
	// request can be answered drains rather than kills.
	stopSignals := s.watchSignals()
	defer stopSignals()

	served := make(chan error, 1)
	go func() { served <- s.srv.Serve(ln) }()
	close(s.servingCh)

	// serveFailed records that the http.Server stopped serving on its own:
	// nothing is accepted any more, so there is no serve period to wait out,
	// but the connections it had still get the graceful shutdown.
	var serveErr error
	serveFailed := func(err error) {
		served = nil
		serveErr = fmt.Errorf("%w: %w", ErrServeStopped, err)
		log.Error("drain: the server stopped serving on its own; shutting down", "err", err)
		s.begin("the server stopped serving")
	}

	// Serving, until the drain starts.
	select {
	case err := <-served:
		serveFailed(err)
	case <-ctx.Done():
		s.begin("context done: " + context.Cause(ctx).Error())
	case <-s.drainCh:
	}

	// The serve period: keep listening and serving.
	if served != nil {
		period := time.NewTimer(s.cfg.ServePeriod - time.Since(s.drainStart))
		select {
		case <-period.C:
			log.Info("drain: serve period over; shutting down", "serve_period", s.cfg.ServePeriod, "shutdown_timeout", s.cfg.ShutdownTimeout)
		case <-s.skipCh:
			// Logged where the skip was decided.
		case err := <-served:
			serveFailed(err)
		}
		period.Stop()
	}

	// The graceful shutdown, bounded by the shutdown timeout.
	shutdownStart := time.Now()
	sctx, cancel := context.WithTimeout(s.stopCtx, s.cfg.ShutdownTimeout)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	cut := 0
	if err != nil && sctx.Err() != nil {
		// Out of time (or stopped): count what is really in flight, then cut
		// everything left.
		cut = s.conns.active()
		_ = s.srv.Close() // its only error repeats a listener close error
	}
	// Shutdown's only other error is a listener close error, harmless now.
	err = nil
	switch {
	case cut > 0 && s.stopCtx.Err() != nil:
		err = ErrStopped
	case cut > 0:
		err = fmt.Errorf("%w (shutdown timeout %s)", ErrShutdownTimeout, s.cfg.ShutdownTimeout)
	}
	if err != nil {
		log.Warn("drain: shutdown cut in-flight requests", "err", err, "requests_cut", cut, "after", time.Since(shutdownStart))
	} else {
		log.Info("drain: shutdown complete", "shutdown_took", time.Since(shutdownStart), "drain_took", time.Since(s.drainStart))
	}
	if served != nil {
		<-served // http.ErrServerClosed
	}
	return errors.Join(serveErr, err)
}

// begin starts the drain once, for reason.
func (s *Server) begin(reason string) {
	s.drainOnce.Do(func() {
		s.drainStart = time.Now()
		s.draining.Store(true)
		s.cfg.Logger.Info("drain: started; health answers 503, still serving",
			"reason", reason, "health_path", s.cfg.HealthPath,
			"serve_period", s.cfg.ServePeriod, "shutdown_timeout", s.cfg.ShutdownTimeout)
		close(s.drainCh)
	})
}

// skipServePeriod ends the serve period now (no-op once it is over). Only a
// repeated signal calls it, so the drain has started.
func (s *Server) skipServePeriod() {
	s.skipOnce.Do(func() { close(s.skipCh) })
}

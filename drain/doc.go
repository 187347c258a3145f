// Package drain lets a Go HTTP service leave a load balancer without dropping a
// request: on SIGTERM (or a call to [Server.Drain]) its health endpoint starts
// answering 503 at once, real traffic keeps being served for a serve period so
// the load balancer has time to notice and stop routing, every response in that
// period carries "Connection: close" so pooled load-balancer connections
// retire, and only then does the server shut down gracefully, bounded by a
// shutdown timeout.
//
// It is a drop-in around an existing [net/http.Server]:
//
//	srv := &http.Server{Handler: mux}
//	d, err := drain.New(srv, drain.Config{ServePeriod: 15 * time.Second})
//	if err != nil { ... }
//	err = d.ListenAndServe(ctx) // returns after the drain and shutdown
//
// # Timeline
//
// Let D be [Config.ServePeriod] and S be [Config.ShutdownTimeout].
//
//	t = 0      drain starts (first SIGTERM/SIGINT, Drain, or ctx cancelled):
//	           health → 503 "draining"; every response gets "Connection: close"
//	0 … D      the listener keeps accepting; real requests are served as usual
//	t = D      listeners close, idle connections close, http.Server.Shutdown
//	           waits for in-flight requests
//	D … D+S    in-flight requests finish; at D+S whatever is left is cut
//
// The server never stops listening before D: a load balancer that still routes
// to it (it has not seen enough failed health checks yet) always finds it
// there. Idle keep-alive connections are deliberately not closed at t = 0: the
// load balancer may pick one of them at the very moment the server closes it,
// and that is a 502 (the keep-alive race). They retire after their next
// response instead, or at D.
//
// # The invariants drain relies on
//
// The package cannot see the load balancer or the process supervisor, so the
// following must hold in the deployment; `mythex check` evaluates all of them
// from a fleet's mythex.yml and prints each one's slack:
//
//   - overlap: D > detection time = (health check interval × unhealthy
//     threshold) + health check timeout (ALB terms; with ALB defaults
//     30s × 2 + 5s = 65s; with the write-up's tuned 5s × 2 + 2s = 12s, which D = 15s beats), plus a
//     margin for the load balancer's own propagation. Otherwise the load
//     balancer still routes to a server that has stopped listening: 502s.
//   - grace: D + S ≤ stop grace period (compose stop_grace_period; Docker's
//     default stop timeout is 10s, Kubernetes' terminationGracePeriodSeconds is
//     30s and counts any preStop wait). Otherwise SIGKILL cuts the drain short.
//     The defaults here (15s + 10s) need a grace period of at least 25s.
//   - keep-alive: [Config.IdleTimeout] > the load balancer's idle timeout (ALB
//     default 60s). Otherwise the server closes an idle connection the load
//     balancer is about to reuse: 502s.
//
// # Signals
//
// While [Server.Serve] runs it handles SIGTERM and SIGINT (see
// [Config.Signals]). The first starts the drain. A second one means an operator
// insists: the rest of the serve period is skipped and the graceful shutdown
// starts at once (still bounded by S), and the log says how much of the serve
// period was skipped. A third one stops the server now, closing every
// connection. Set [Config.IgnoreRepeatedSignals] to make the drain always run
// its full course whatever arrives after the first signal.
//
// Signals are handled from the moment Serve is called; [Server.Serving] says
// when that is, so announce readiness after it. Before that (while the program
// boots, or between net.Listen and Serve) a SIGTERM has its default effect and
// kills the process, resetting any connection already waiting in the
// listener's queue. To close that window too, pass Serve a context from
// signal.NotifyContext made at the top of main: cancelling the context starts
// the drain as well (a signal caught that way does not count as the first one
// of the policy above).
package drain

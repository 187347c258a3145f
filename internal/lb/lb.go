// Package lb is mythex's embedded load balancer: an HTTP/1.1 reverse proxy
// with the semantics of an AWS ALB target group — active health checks with
// interval, timeout, healthy and unhealthy thresholds; target states initial,
// healthy, unhealthy, draining and unused with ALB reason codes; fail-open when
// no target is healthy; a deregistration delay that drains in-flight requests;
// an idle timeout on client and backend connections; no retries and no passive
// ejection. It exists to reproduce the 502s of a real deploy and to prove they
// are gone. An admin API (bearer token, loopback by default) registers and
// deregisters targets and reports their state; given an AWS key pair the same
// listener answers the ELBv2 API (SigV4-signed) for its one target group;
// Prometheus metrics sit beside it. See docs/lb.md.
package lb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jonboulle/clockwork"
)

// Options configure a Server.
type Options struct {
	// Settings are the target group's settings (SettingsFromFleet). Required.
	Settings Settings
	// Token is the admin API's bearer token. Required.
	Token string
	// ShutdownTimeout bounds how long Serve waits for requests in progress
	// after its context ends. Default 10s.
	ShutdownTimeout time.Duration
	// Clock drives health checks and drains. Default: the real clock.
	Clock clockwork.Clock
	// Logger receives state changes (never per-request lines). Default:
	// slog.Default().
	Logger *slog.Logger
	// HealthChecker runs health checks. Default: NewHTTPHealthChecker().
	HealthChecker HealthChecker
	// ELBv2, when not nil, makes the admin listener also answer the ELBv2
	// API (AWS Query protocol, POST /), SigV4-signed with its key pair.
	ELBv2 *ELBv2Options
}

// Server is a whole load balancer: the target group, the proxy in front of it,
// the admin API and the metrics.
type Server struct {
	// Group is the target group; register the fleet's hosts on it.
	Group *TargetGroup
	// Metrics are the LB's metrics.
	Metrics *Metrics
	// Proxy is the data path.
	Proxy *Proxy
	// TargetGroupARN is the ARN the ELBv2 endpoint answers for; empty when
	// it is off.
	TargetGroupARN string

	admin           http.Handler
	elbv2           *ELBv2Options // with defaults; nil when off
	log             *slog.Logger
	shutdownTimeout time.Duration
}

// New builds a Server. It logs every target state change and fail-open switch
// at info (warn when failing open). Errors: invalid settings (matching
// fleet.ErrInvalid) or an empty token.
func New(o Options) (*Server, error) {
	if err := o.Settings.Validate(); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	s := &Server{log: o.Logger, shutdownTimeout: o.ShutdownTimeout}
	var m *Metrics
	s.Group = NewTargetGroup(o.Settings, GroupDeps{
		Clock: o.Clock, Logger: o.Logger, HealthChecker: o.HealthChecker,
		OnChange: func(c Change) {
			logChange(o.Logger, c)
			m.change(c)
		},
		OnCheck: func(id string, r CheckResult) { m.check(id, r) },
		OnFailOpen: func(failOpen bool) {
			if failOpen {
				o.Logger.Warn("no target is healthy: failing open, routing to every registered target")
			} else {
				o.Logger.Info("fail-open ended: routing to healthy targets only")
			}
		},
	})
	m = NewMetrics(s.Group)
	s.Metrics = m
	s.Proxy = NewProxy(s.Group, m, o.Settings, o.Logger)
	admin, err := NewAdmin(s.Group, m, o.Token)
	if err != nil {
		s.Group.Close()
		return nil, err
	}
	if o.ELBv2 != nil {
		if err := o.ELBv2.Validate(); err != nil {
			s.Group.Close()
			return nil, err
		}
		clock := o.Clock
		if clock == nil {
			clock = clockwork.NewRealClock()
		}
		api := newELBv2(s.Group, *o.ELBv2, clock, o.Logger, m.elbv2Call)
		s.TargetGroupARN = api.o.TargetGroupARN
		s.elbv2 = &api.o
		bearer := admin
		admin = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isELBv2Request(r) {
				api.ServeHTTP(w, r)
				return
			}
			bearer.ServeHTTP(w, r)
		})
	}
	s.admin = admin
	return s, nil
}

// Admin is the admin API handler (bearer token required).
func (s *Server) Admin() http.Handler { return s.admin }

// Serve serves traffic on ln and the admin API on adminLn until ctx ends,
// then shuts down: it stops accepting, waits up to the shutdown timeout for
// requests in progress, and stops health checks and drains. It returns nil
// after a clean shutdown, or the first listener error.
func (s *Server) Serve(ctx context.Context, ln, adminLn net.Listener) error {
	adminSrv := &http.Server{Handler: s.admin, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- s.Proxy.Serve(ln) }()
	go func() {
		if err := adminSrv.Serve(adminLn); !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("admin listener: %w", err)
			return
		}
		errc <- nil
	}()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.shutdownTimeout)
	defer cancel()
	perr := s.Proxy.Shutdown(sctx)
	aerr := adminSrv.Shutdown(sctx)
	s.Group.Close()
	if serveErr != nil {
		return serveErr
	}
	return errors.Join(perr, aerr)
}

// logChange logs one target state change.
func logChange(log *slog.Logger, c Change) {
	attrs := []any{"target", c.ID, "address", c.Address, "from", c.From.State.String(), "to", c.To.State.String()}
	if c.To.Reason != "" {
		attrs = append(attrs, "reason", string(c.To.Reason), "description", c.To.Description)
	}
	if c.CutOff > 0 {
		attrs = append(attrs, "cut_off_requests", c.CutOff)
		log.Warn("deregistration delay passed with requests in flight; cut them off", attrs...)
		return
	}
	if c.From.State == c.To.State {
		// Same state, new reason (an ALB target in initial goes from
		// Elb.RegistrationInProgress to Elb.InitialHealthChecking).
		attrs = append(attrs, "from_reason", string(c.From.Reason))
		log.Info("target state reason changed", attrs...)
		return
	}
	log.Info("target state changed", attrs...)
}

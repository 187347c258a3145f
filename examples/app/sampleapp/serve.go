package sampleapp

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/mythex/mythex/drain"
)

// Exit codes of the serving app (a crash uses its own code).
const (
	exitOK      = 0 // drained and shut down (even if the shutdown timeout cut requests: logged)
	exitFailure = 1 // could not listen or serve; boot crash
	exitUsage   = 2 // bad flags or environment
)

// deps are what serve takes from the process, so tests can run it in-process
// (in a synctest bubble, on an in-memory listener).
type deps struct {
	listen  func(network, addr string) (net.Listener, error)
	log     *slog.Logger
	signals []os.Signal // signals that drain; empty: none (ctx only)
}

// serve runs the app as c says and returns the process exit code: a boot crash
// returns 1 without listening; otherwise it waits the start delay, listens,
// serves until drained (signal or ctx) or until the crash-after time, which
// returns c.CrashExitCode at once, closing every connection as a crash would.
// Crash times count from the call, which is the process start. ctx done before
// listening stops the boot (exit 0); once serving, it starts the drain.
func serve(ctx context.Context, c config, d deps) int {
	start := time.Now()
	log := d.log.With("service", c.Service, "version", c.Version)

	var crash <-chan time.Time
	if c.CrashAfter > 0 {
		t := time.NewTimer(c.CrashAfter)
		defer t.Stop()
		crash = t.C
	}
	crashed := func(phase string) int {
		log.Error("app: crash (--crash-after)", "exit_code", c.CrashExitCode, "after", time.Since(start), "phase", phase)
		return c.CrashExitCode
	}

	if c.CrashOnStart > 0 {
		log.Info("app: booting; will crash before listening (--crash-on-start)", "after", c.CrashOnStart)
		t := time.NewTimer(c.CrashOnStart)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			log.Info("app: stopped before the boot crash")
			return exitOK
		}
		log.Error("app: crash on start (--crash-on-start)", "exit_code", exitFailure, "after", time.Since(start))
		return exitFailure
	}

	if c.StartDelay > 0 {
		log.Info("app: slow start; waiting before listening (--start-delay)", "start_delay", c.StartDelay)
		t := time.NewTimer(c.StartDelay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-crash:
			return crashed("start delay")
		case <-ctx.Done():
			log.Info("app: stopped during the start delay")
			return exitOK
		}
	}

	ln, err := d.listen("tcp", c.Listen)
	if err != nil {
		log.Error("app: cannot listen", "addr", c.Listen, "err", err)
		return exitFailure
	}
	srv := &http.Server{
		Handler:           serviceHandler(c),
		ReadHeaderTimeout: 10 * time.Second,
	}
	dr, err := drain.New(srv, drainConfig(c, d))
	if err != nil {
		ln.Close()
		log.Error("app: bad drain settings", "err", err)
		return exitUsage
	}
	served := make(chan error, 1)
	go func() { served <- dr.Serve(ctx, ln) }()
	select {
	case <-dr.Serving():
		// Announced only now that SIGTERM drains: whoever waits for this line
		// may signal at once.
		log.Info("app: listening", "addr", ln.Addr().String(), "host", c.HostName, "health_path", c.HealthPath,
			"drain_serve_period", c.DrainServePeriod, "shutdown_timeout", c.ShutdownTimeout, "idle_timeout", srv.IdleTimeout)
	case err := <-served:
		return stopped(log, err)
	}
	select {
	case err := <-served:
		return stopped(log, err)
	case <-crash:
		code := crashed("serving")
		_ = srv.Close() // a crash leaves nothing running: listener and connections go
		<-served
		return code
	}
}

// stopped logs how serving ended and returns the exit code.
func stopped(log *slog.Logger, err error) int {
	switch {
	case err == nil:
		log.Info("app: stopped after draining")
		return exitOK
	case errors.Is(err, drain.ErrShutdownTimeout), errors.Is(err, drain.ErrStopped):
		log.Warn("app: stopped after draining; some requests were cut", "err", err)
		return exitOK
	default:
		log.Error("app: serving failed", "err", err)
		return exitFailure
	}
}

// drainConfig maps the app's flags onto drain.Config. On the command line 0
// means "none" for the serve period and the shutdown timeout (to reproduce the
// write-up's broken "before" drain), whereas drain treats 0 as its default, so
// 0 becomes the smallest positive duration.
func drainConfig(c config, d deps) drain.Config {
	orNone := func(v time.Duration) time.Duration {
		if v == 0 {
			return time.Nanosecond
		}
		return v
	}
	dc := drain.Config{
		HealthPath:      c.HealthPath,
		ServePeriod:     orNone(c.DrainServePeriod),
		ShutdownTimeout: orNone(c.ShutdownTimeout),
		IdleTimeout:     c.IdleTimeout,
		Signals:         d.signals,
		NoSignals:       len(d.signals) == 0,
		Logger:          d.log,
	}
	if c.Unhealthy {
		dc.Ready = func(context.Context) error { return errUnhealthy }
	}
	return dc
}

// errUnhealthy is the readiness error of --unhealthy.
var errUnhealthy = errors.New("--unhealthy is set")

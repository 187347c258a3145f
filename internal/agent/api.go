package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/watchdog"
)

// maxDefinitionBytes bounds a published definition's size.
const maxDefinitionBytes = 4 << 20

// Handler returns the agent's HTTP API (package agentapi documents it), every
// route behind the bearer token. Requests that change the host need the live
// host lease in the X-Mythex-Lease header.
func (a *Agent) Handler(token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+agentapi.PathStatus, a.handleStatus)
	for _, fleet := range []bool{false, true} {
		path, k := agentapi.PathLease, a.hostLease
		if fleet {
			path, k = agentapi.PathFleetLease, a.fleetLease
		}
		mux.HandleFunc("POST "+path, a.handleAcquire(k))
		mux.HandleFunc("PUT "+path, a.handleRenew(k))
		mux.HandleFunc("DELETE "+path, a.handleRelease(k))
	}
	mux.HandleFunc("POST "+agentapi.PathLeaseBreak, a.handleBreak)
	mux.HandleFunc("PUT "+agentapi.PathDefinition, a.leased("publish", func(r *http.Request) (any, error) {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxDefinitionBytes+1))
		if err != nil {
			return nil, err
		}
		if len(b) > maxDefinitionBytes {
			return nil, fmt.Errorf("%w: definition larger than %d bytes", ErrInvalid, maxDefinitionBytes)
		}
		return a.Publish(r.Context(), b)
	}))
	mux.HandleFunc("POST "+agentapi.PathDrain, a.leased("drain", func(r *http.Request) (any, error) {
		var req agentapi.ServicesRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		return nil, a.Drain(r.Context(), req.Services)
	}))
	mux.HandleFunc("POST "+agentapi.PathStop, a.leased("stop", func(r *http.Request) (any, error) {
		return a.Stop(r.Context())
	}))
	mux.HandleFunc("POST "+agentapi.PathStart, a.leased("start", func(r *http.Request) (any, error) {
		return a.Start(r.Context())
	}))
	mux.HandleFunc("POST "+agentapi.PathRollback, a.leased("rollback", func(r *http.Request) (any, error) {
		return a.Rollback(r.Context())
	}))
	mux.HandleFunc("POST "+agentapi.PathMarkGood, a.leased("mark-good", func(r *http.Request) (any, error) {
		return nil, a.MarkGood(r.Context())
	}))
	mux.HandleFunc("POST "+agentapi.PathVerify, func(w http.ResponseWriter, r *http.Request) {
		var req agentapi.ServicesRequest
		if err := decodeBody(r, &req); err != nil {
			writeErr(w, err)
			return
		}
		rep, err := a.Verify(r.Context(), req.Services, req.Version)
		respond(w, rep, err)
	})
	mux.HandleFunc("GET "+agentapi.PathMaintenance, a.handleMaintenanceGet)
	mux.HandleFunc("PUT "+agentapi.PathMaintenance, a.handleMaintenanceOn)
	mux.HandleFunc("DELETE "+agentapi.PathMaintenance, a.handleMaintenanceOff)
	a.historyRoutes(mux)
	a.definitionRoutes(mux)
	mux.Handle("GET "+agentapi.PathMetrics, promhttp.HandlerFor(a.cfg.Registry, promhttp.HandlerOpts{}))
	return auth.Bearer(token, mux)
}

// leased wraps an operation that needs the live host lease.
func (a *Agent) leased(op string, fn func(*http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// The lease is checked and the work done under one hold of the
		// host (stepBegin): a lease that runs out meanwhile is recovered
		// only after the step has ended, never under it.
		end, err := a.stepBegin(r.Header.Get(agentapi.HeaderLease), op)
		if err != nil {
			a.metrics.op(op, err)
			writeErr(w, err)
			return
		}
		if h := a.hooks.afterLeaseCheck; h != nil {
			h(op)
		}
		out, err := fn(r)
		a.metrics.op(op, err)
		state := stepDone
		if err != nil {
			state = stepFailed
			a.log.Warn("operation failed", "op", op, "err", err)
		}
		a.hostLease.setStep(op, state)
		end()
		respond(w, out, err)
	}
}

func (a *Agent) handleAcquire(k *leaseKeeper) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req agentapi.LeaseRequest
		if err := decodeBody(r, &req); err != nil {
			writeErr(w, err)
			return
		}
		ttl, err := parseTTL(req.TTL)
		if err != nil {
			writeErr(w, err)
			return
		}
		if req.Holder == "" {
			writeErr(w, fmt.Errorf("%w: holder is required: say who takes the lease", ErrInvalid))
			return
		}
		var l Lease
		if k == a.hostLease {
			l, err = a.acquireHostLease(r.Context(), req.Holder, ttl)
		} else {
			l, err = k.acquire(req.Holder, ttl)
		}
		respond(w, wireLease(l), err)
	}
}

func (a *Agent) handleRenew(k *leaseKeeper) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req agentapi.LeaseRequest
		if err := decodeBody(r, &req); err != nil {
			writeErr(w, err)
			return
		}
		ttl, err := parseTTL(req.TTL)
		if err != nil {
			writeErr(w, err)
			return
		}
		l, err := k.renew(r.Header.Get(agentapi.HeaderLease), ttl)
		respond(w, wireLease(l), err)
	}
}

func (a *Agent) handleRelease(k *leaseKeeper) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		respond(w, nil, k.release(r.Header.Get(agentapi.HeaderLease)))
	}
}

// Steps' states in a lease (agentapi.Lease.StepState).
const (
	stepRunning = "running"
	stepDone    = "done"
	stepFailed  = "failed"
)

func (a *Agent) handleBreak(w http.ResponseWriter, r *http.Request) {
	var req agentapi.LeaseBreakRequest
	if err := decodeBody(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	k := a.hostLease
	if req.Fleet {
		k = a.fleetLease
	}
	broken, recErr, err := k.breakLease(req.Force, req.By)
	a.metrics.op("lease-break", err)
	if err != nil {
		writeErr(w, err)
		return
	}
	rep := agentapi.LeaseBreakReport{Broken: wireLease(broken)}
	if !req.Fleet {
		rep.Recovery = a.recovery()
		if recErr != nil && rep.Recovery == nil {
			rep.Recovery = &agentapi.Recovery{State: agentapi.RecoveryFailed, Holder: broken.Holder, Error: recErr.Error()}
		}
	}
	respond(w, rep, nil)
}

func parseTTL(s string) (time.Duration, error) {
	ttl, err := time.ParseDuration(s)
	if err != nil || ttl <= 0 || ttl > MaxLeaseTTL {
		return 0, fmt.Errorf("%w: ttl %q must be a Go duration more than 0 and at most %v, like 30s", ErrInvalid, s, MaxLeaseTTL)
	}
	return ttl, nil
}

func wireLease(l Lease) agentapi.Lease {
	return agentapi.Lease{ID: l.ID, Holder: l.Holder, Acquired: l.Acquired, Expires: l.Expires}
}

// wireLeaseRecord is a lease with its bookkeeping, for status.
func wireLeaseRecord(r leaseRecord) agentapi.Lease {
	l := wireLease(r.Lease)
	l.TTL = r.TTL.String()
	if !r.Renewed.IsZero() {
		t := r.Renewed
		l.Renewed = &t
	}
	l.Step, l.StepState = r.Step, r.StepState
	if r.Restore != nil {
		l.Restore = &agentapi.DefinitionRef{Version: r.Restore.Version, Hash: r.Restore.Hash}
	}
	return l
}

func decodeBody(r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: request body: %v", ErrInvalid, err)
	}
	return nil
}

func respond(w http.ResponseWriter, out any, err error) {
	if err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if out == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

// writeErr maps errors to statuses at this one boundary.
func writeErr(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrLeaseHeld), errors.Is(err, ErrLeaseRenewed):
		code = http.StatusConflict
	case errors.Is(err, ErrNoLease):
		code = http.StatusPreconditionFailed
	case errors.Is(err, ErrInvalid), errors.Is(err, definition.ErrInvalid), errors.Is(err, watchdog.ErrInvalid):
		code = http.StatusUnprocessableEntity
	case errors.Is(err, ErrNothingPublished):
		code = http.StatusConflict
	case errors.Is(err, ErrNoWatchdog):
		code = http.StatusNotFound
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(agentapi.ErrorBody{Error: err.Error()})
}

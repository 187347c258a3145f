package lb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/lbapi"
)

// ErrAdminNotLoopback is returned by CheckAdminAddress for an admin address
// that is not on loopback when remote admin was not allowed.
var ErrAdminNotLoopback = errors.New("admin address is not on loopback")

// CheckAdminAddress refuses an admin listen address that binds beyond the
// loopback interface unless allowRemote is set (mythex lb
// --insecure-plaintext). It returns ErrAdminNotLoopback (wrapped) naming the
// address and the fix.
func CheckAdminAddress(addr string, allowRemote bool) error {
	if allowRemote || auth.IsLoopback(addr) {
		return nil
	}
	return fmt.Errorf("%w: %q; bind it to 127.0.0.1 (load_balancer.admin_listen) or pass --insecure-plaintext on a network you trust (the token crosses it in clear)", ErrAdminNotLoopback, addr)
}

// NewAdmin returns the admin API (docs/lb.md; wire types and client in
// internal/lbapi), every route behind the bearer
// token (401 otherwise, and nothing changes):
//
//	GET    /v1/targets       → 200 {"targets":[TargetStatus...]}
//	GET    /v1/targets/{id}  → 200 TargetStatus, 404
//	POST   /v1/targets       {"id","address"} → 200 TargetStatus (initial), 400, 409
//	DELETE /v1/targets/{id}  → 200 TargetStatus (draining), 404
//	GET    /v1/settings      → 200 Settings
//	PUT    /v1/settings      Settings (every field) → 200 Settings, 400 (nothing changed)
//	GET    /metrics          → Prometheus exposition of m
//
// Errors are {"error": "..."}. token must not be empty.
func NewAdmin(g *TargetGroup, m *Metrics, token string) (http.Handler, error) {
	if token == "" {
		return nil, fmt.Errorf("lb admin: %w", auth.ErrNoToken)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/targets", func(w http.ResponseWriter, _ *http.Request) {
		all := g.Targets()
		l := lbapi.TargetList{Targets: make([]lbapi.TargetStatus, len(all))}
		for i, st := range all {
			l.Targets[i] = st.Wire()
		}
		writeJSON(w, http.StatusOK, l)
	})
	mux.HandleFunc("GET /v1/targets/{id}", func(w http.ResponseWriter, r *http.Request) {
		st, err := g.Target(r.PathValue("id"))
		answer(w, st, err)
	})
	mux.HandleFunc("POST /v1/targets", func(w http.ResponseWriter, r *http.Request) {
		var req lbapi.RegisterRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, lbapi.ErrorBody{Error: fmt.Sprintf(`body must be {"id":"web-1","address":"127.0.0.1:9101"}: %v`, err)})
			return
		}
		st, err := g.Register(req.ID, req.Address)
		answer(w, st, err)
	})
	mux.HandleFunc("DELETE /v1/targets/{id}", func(w http.ResponseWriter, r *http.Request) {
		st, err := g.Deregister(r.PathValue("id"))
		answer(w, st, err)
	})
	mux.HandleFunc("GET /v1/settings", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, g.Settings().Wire())
	})
	mux.HandleFunc("PUT /v1/settings", func(w http.ResponseWriter, r *http.Request) {
		next, err := decodeSettings(w, r, g.Settings())
		if err != nil {
			writeJSON(w, http.StatusBadRequest, lbapi.ErrorBody{Error: err.Error()})
			return
		}
		switch err := g.Modify(next); {
		case errors.Is(err, ErrClosed):
			writeJSON(w, http.StatusServiceUnavailable, lbapi.ErrorBody{Error: err.Error()})
		case err != nil:
			writeJSON(w, http.StatusBadRequest, lbapi.ErrorBody{Error: err.Error()})
		default:
			writeJSON(w, http.StatusOK, g.Settings().Wire())
		}
	})
	mux.Handle("GET /metrics", m.Handler())
	return auth.Bearer(token, mux), nil
}

// decodeSettings reads the body of PUT /v1/settings onto base: every field
// of lbapi.Settings must be given (a missing deregistration delay must not
// read as 0), none other.
func decodeSettings(w http.ResponseWriter, r *http.Request, base Settings) (Settings, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		return base, err
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(b, &present); err != nil {
		return base, fmt.Errorf("body must be a JSON object of the settings: %w", err)
	}
	var missing []string
	for _, f := range settingsFields {
		if _, ok := present[f]; !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return base, fmt.Errorf("every setting must be given; missing %s", strings.Join(missing, ", "))
	}
	var ws lbapi.Settings
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ws); err != nil {
		return base, fmt.Errorf("settings: %w", err)
	}
	return withWire(base, ws)
}

// settingsFields are the JSON fields of lbapi.Settings.
var settingsFields = []string{"health_check_path", "health_check_interval_seconds", "health_check_timeout_seconds",
	"healthy_threshold", "unhealthy_threshold", "deregistration_delay_seconds", "algorithm"}

// answer maps the group's errors to statuses, at this one boundary.
func answer(w http.ResponseWriter, st TargetStatus, err error) {
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, st.Wire())
	case errors.Is(err, ErrTargetNotFound):
		writeJSON(w, http.StatusNotFound, lbapi.ErrorBody{Error: err.Error()})
	case errors.Is(err, ErrInvalidTarget):
		writeJSON(w, http.StatusBadRequest, lbapi.ErrorBody{Error: err.Error()})
	case errors.Is(err, ErrTargetConflict):
		writeJSON(w, http.StatusConflict, lbapi.ErrorBody{Error: err.Error()})
	default:
		writeJSON(w, http.StatusServiceUnavailable, lbapi.ErrorBody{Error: err.Error()})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

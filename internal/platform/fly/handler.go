package fly

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/platform"
)

// Suspender is a platform that can put a machine to sleep (the local
// platform); Handler serves POST .../suspend only for those.
type Suspender interface {
	Suspend(ctx context.Context, app, id string) error
}

// NewHandler serves p over HTTP as the subset of the Fly Machines API v1 the
// Client uses: list, create, get, update, start, stop, suspend, destroy,
// wait. Every request needs "Authorization: Bearer <token>" (token must not
// be empty). A machine's Address is published as private_ip plus the first
// service's internal port, so a Client with PrivateAddresses can reach it.
func NewHandler(p platform.Platform, token string) http.Handler {
	h := &handler{p: p, leases: map[string]heldLease{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/apps/{app}/machines", h.list)
	mux.HandleFunc("POST /v1/apps/{app}/machines", h.create)
	mux.HandleFunc("GET /v1/apps/{app}/machines/{id}", h.get)
	mux.HandleFunc("POST /v1/apps/{app}/machines/{id}", h.update)
	mux.HandleFunc("DELETE /v1/apps/{app}/machines/{id}", h.destroy)
	mux.HandleFunc("POST /v1/apps/{app}/machines/{id}/start", h.action(p.Start))
	mux.HandleFunc("POST /v1/apps/{app}/machines/{id}/stop", h.action(p.Stop))
	mux.HandleFunc("POST /v1/apps/{app}/machines/{id}/suspend", h.suspend)
	mux.HandleFunc("GET /v1/apps/{app}/machines/{id}/wait", h.wait)
	mux.HandleFunc("POST /v1/apps/{app}/machines/{id}/lease", h.lease)
	mux.HandleFunc("DELETE /v1/apps/{app}/machines/{id}/lease", h.releaseLease)
	return auth.Bearer(token, h.fenced(mux))
}

type handler struct {
	p platform.Platform

	mu     sync.Mutex
	leases map[string]heldLease // app/id -> lease
}

// heldLease is one machine's lease, as Fly keeps it: a nonce, until when.
type heldLease struct {
	nonce string
	until time.Time
}

// fenced refuses a write to a machine whose lease is held, unless it
// carries the lease's nonce (Fly: 409 "lease currently held by ...").
func (h *handler) fenced(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && !strings.HasSuffix(r.URL.Path, "/lease") {
			parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
			if len(parts) >= 5 {
				h.mu.Lock()
				l, ok := h.leases[parts[2]+"/"+parts[4]]
				h.mu.Unlock()
				if ok && time.Now().Before(l.until) && r.Header.Get(NonceHeader) != l.nonce {
					writeJSON(w, http.StatusConflict, apiError{Error: "lease currently held by another client"})
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (h *handler) lease(w http.ResponseWriter, r *http.Request) {
	if _, err := h.p.Get(r.Context(), r.PathValue("app"), r.PathValue("id")); err != nil {
		writeErr(w, err)
		return
	}
	ttl, err := strconv.Atoi(r.URL.Query().Get("ttl"))
	if err != nil || ttl <= 0 {
		ttl = 30
	}
	key := r.PathValue("app") + "/" + r.PathValue("id")
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.leases == nil {
		h.leases = map[string]heldLease{}
	}
	now := time.Now()
	until := now.Add(time.Duration(ttl) * time.Second)
	l, ok := h.leases[key]
	live := ok && now.Before(l.until)
	switch {
	case live && r.Header.Get(NonceHeader) != l.nonce:
		writeJSON(w, http.StatusConflict, apiError{Error: "lease currently held by another client"})
		return
	case live:
		// A refresh by the holder extends the lease and keeps its nonce,
		// as Fly's does (flyctl refreshes and goes on with the nonce it
		// had): a holder whose refresh answer was lost can still write
		// and release.
		l.until = until
	default:
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		l = heldLease{nonce: hex.EncodeToString(b), until: until}
	}
	h.leases[key] = l
	writeJSON(w, http.StatusOK, map[string]any{"status": "success", "data": map[string]any{"nonce": l.nonce, "expires_at": l.until.Unix(), "owner": "mythex"}})
}

func (h *handler) releaseLease(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("app") + "/" + r.PathValue("id")
	h.mu.Lock()
	defer h.mu.Unlock()
	if l, ok := h.leases[key]; ok && r.Header.Get(NonceHeader) != l.nonce {
		writeJSON(w, http.StatusConflict, apiError{Error: "lease currently held by another client"})
		return
	}
	delete(h.leases, key)
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	ms, err := h.p.List(r.Context(), r.PathValue("app"))
	if err != nil {
		writeErr(w, err)
		return
	}
	out := make([]apiMachine, 0, len(ms))
	for _, m := range ms {
		out = append(out, fromPlatform(m))
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	m, err := h.p.Get(r.Context(), r.PathValue("app"), r.PathValue("id"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, fromPlatform(m))
}

func decodeConfig(r *http.Request) (platform.Config, error) {
	var body struct {
		Config apiConfig `json:"config"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20)).Decode(&body); err != nil {
		return platform.Config{}, errors.Join(platform.ErrInvalid, err)
	}
	return body.Config.toPlatform(), nil
}

func (h *handler) create(w http.ResponseWriter, r *http.Request) {
	cfg, err := decodeConfig(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	cfg.Port = 0 // the platform chooses where its machines listen
	m, err := h.p.Create(r.Context(), r.PathValue("app"), cfg)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, fromPlatform(m))
}

func (h *handler) update(w http.ResponseWriter, r *http.Request) {
	cfg, err := decodeConfig(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	cfg.Port = 0
	m, err := h.p.Update(r.Context(), r.PathValue("app"), r.PathValue("id"), cfg)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, fromPlatform(m))
}

func (h *handler) destroy(w http.ResponseWriter, r *http.Request) {
	if err := h.p.Destroy(r.Context(), r.PathValue("app"), r.PathValue("id")); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (h *handler) action(f func(ctx context.Context, app, id string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := f(r.Context(), r.PathValue("app"), r.PathValue("id")); err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	}
}

func (h *handler) suspend(w http.ResponseWriter, r *http.Request) {
	s, ok := h.p.(Suspender)
	if !ok {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "this platform cannot suspend machines"})
		return
	}
	h.action(s.Suspend)(w, r)
}

func (h *handler) wait(w http.ResponseWriter, r *http.Request) {
	state := platform.State(r.URL.Query().Get("state"))
	if state == "" {
		state = platform.StateStarted
	}
	secs, err := strconv.Atoi(r.URL.Query().Get("timeout"))
	if err != nil || secs <= 0 || secs > 60 {
		secs = 60
	}
	if err := h.p.Wait(r.Context(), r.PathValue("app"), r.PathValue("id"), state, time.Duration(secs)*time.Second); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, platform.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, platform.ErrImageNotFound):
		code = http.StatusUnprocessableEntity
	case errors.Is(err, platform.ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, platform.ErrConflict):
		code = http.StatusConflict
	case errors.Is(err, platform.ErrTimeout):
		code = http.StatusRequestTimeout
	case errors.Is(err, platform.ErrRateLimited):
		code = http.StatusTooManyRequests
	case errors.Is(err, platform.ErrUnavailable):
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, apiError{Error: err.Error()})
}

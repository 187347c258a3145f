package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/history"
)

// historyStore is the host's deploy history (history.db in the state dir),
// opened on first use so an agent that is never asked pays nothing.
type historyStore struct {
	once sync.Once
	s    *history.Store
	err  error
	mu   sync.Mutex
}

func (a *Agent) history() (*history.Store, error) {
	h := &a.hist
	h.once.Do(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.s, h.err = history.Open(filepath.Join(a.cfg.StateDir, history.DBFile))
	})
	return h.s, h.err
}

// closeHistory closes the store if it was opened.
func (a *Agent) closeHistory() {
	h := &a.hist
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.s != nil {
		_ = h.s.Close()
		h.s = nil
		h.err = errors.New("agent closed")
	}
}

// AppendHistory records one deploy as this host saw it. The record's host
// must be this agent's. Errors: ErrInvalid (wrapping history.ErrInvalid).
func (a *Agent) AppendHistory(ctx context.Context, r history.Record) error {
	if r.Host != a.cfg.Host {
		return fmt.Errorf("%w: record of host %q sent to the agent of %q", ErrInvalid, r.Host, a.cfg.Host)
	}
	s, err := a.history()
	if err != nil {
		return err
	}
	if err := s.Append(ctx, r); err != nil {
		if errors.Is(err, history.ErrInvalid) {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return err
	}
	return nil
}

// History lists this host's newest limit records (≤ 0: all), newest first.
func (a *Agent) History(ctx context.Context, limit int) ([]history.Record, error) {
	s, err := a.history()
	if err != nil {
		return nil, err
	}
	return s.List(ctx, limit)
}

// HistoryOf returns this host's record of deploy id (none when there is no
// such deploy).
func (a *Agent) HistoryOf(ctx context.Context, id string) ([]history.Record, error) {
	s, err := a.history()
	if err != nil {
		return nil, err
	}
	return s.Find(ctx, id)
}

// PutTimeline keeps a deploy's recording beside this host's record of it.
// Errors: ErrInvalid (wrapping history.ErrInvalid: empty, too large, not a
// recording), history.ErrNoRecord.
func (a *Agent) PutTimeline(ctx context.Context, id string, data []byte) error {
	s, err := a.history()
	if err != nil {
		return err
	}
	if err := s.PutTimeline(ctx, id, a.cfg.Host, data); err != nil {
		if errors.Is(err, history.ErrInvalid) {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return err
	}
	return nil
}

// Timeline returns the recording kept with this host's record of deploy id.
// Errors: history.ErrNoTimeline.
func (a *Agent) Timeline(ctx context.Context, id string) ([]byte, error) {
	s, err := a.history()
	if err != nil {
		return nil, err
	}
	return s.Timeline(ctx, id, a.cfg.Host)
}

// historyRoutes serves GET (?limit=N, or ?id=ID) and POST of
// agentapi.PathHistory, and GET and PUT of agentapi.PathTimeline. No lease
// is needed: a record changes nothing that runs, and a deployer writes
// it after its leases are gone.
func (a *Agent) historyRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+agentapi.PathHistory, func(w http.ResponseWriter, r *http.Request) {
		limit := 0
		if s := r.URL.Query().Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				writeErr(w, fmt.Errorf("%w: limit %q is not a count", ErrInvalid, s))
				return
			}
			limit = n
		}
		var recs []history.Record
		var err error
		if id := r.URL.Query().Get("id"); id != "" {
			recs, err = a.HistoryOf(r.Context(), id)
		} else {
			recs, err = a.History(r.Context(), limit)
		}
		respond(w, agentapi.HistoryList{Records: recs}, err)
	})
	mux.HandleFunc("POST "+agentapi.PathHistory, func(w http.ResponseWriter, r *http.Request) {
		var rec history.Record
		if err := decodeBody(r, &rec); err != nil {
			writeErr(w, err)
			return
		}
		respond(w, nil, a.AppendHistory(r.Context(), rec))
	})
	mux.HandleFunc("PUT "+agentapi.PathTimeline, func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(io.LimitReader(r.Body, history.MaxTimeline+1))
		if err != nil {
			writeErr(w, fmt.Errorf("%w: request body: %v", ErrInvalid, err))
			return
		}
		respond(w, nil, a.PutTimeline(r.Context(), r.PathValue("id"), b))
	})
	mux.HandleFunc("GET "+agentapi.PathTimeline, func(w http.ResponseWriter, r *http.Request) {
		b, err := a.Timeline(r.Context(), r.PathValue("id"))
		if err != nil {
			writeErr(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(b)
	})
}

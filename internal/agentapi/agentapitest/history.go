// Package agentapitest serves a fake host agent's HTTP API for tests of the
// code that reads agents through package agentapi (the fleet's history, the
// deploy report), without running an agent. It answers as the real agent
// does, from what the test hands it. It is imported only from _test.go
// files.
package agentapitest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/history"
)

// History serves the history part of a host agent's API until the test
// ends, and returns its address (host:port, as mythex.yml's agent: names
// one). GET agentapi.PathHistory lists records in the order given (newest
// first, as the agent keeps them), only the one whose ID ?id= names, and
// at most ?limit= of them; GET agentapi.PathTimeline answers the bytes
// timelines holds for that deploy, 404 when it holds none (nil counts as
// none). A request without "Bearer token" is refused 401, as the agent
// refuses it; any other path is 404. Records' Timeline flags are left as
// given.
func History(t testing.TB, token string, records []history.Record, timelines map[string][]byte) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+agentapi.PathHistory, func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		recs := []history.Record{}
		for _, rec := range records {
			if (id == "" || rec.ID == id) && (limit <= 0 || len(recs) < limit) {
				recs = append(recs, rec)
			}
		}
		_ = json.NewEncoder(w).Encode(agentapi.HistoryList{Records: recs})
	})
	mux.HandleFunc("GET "+agentapi.PathTimeline, func(w http.ResponseWriter, r *http.Request) {
		b := timelines[r.PathValue("id")]
		if b == nil {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

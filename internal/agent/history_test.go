package agent

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/history"
	"github.com/mythex/mythex/internal/runtime/process"
)

// TestAgent_History: the agent keeps its host's deploy records across a
// restart, serves them newest first, and refuses another host's record.
func TestAgent_History(t *testing.T) {
	dir := t.TempDir()
	start := func() (*Agent, *agentapi.Client, func()) {
		rt, err := process.New(process.Options{StateDir: filepath.Join(dir, "runtime")})
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(Config{Host: "web-1", StateDir: dir, Runtime: rt, RuntimeName: "process"})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(a.Handler(testToken))
		return a, agentapi.NewClient(srv.URL, testToken, nil), func() { srv.Close(); a.Close(); rt.Close() }
	}
	ctx := context.Background()
	_, c, stop := start()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, id := range []string{"d1", "d2"} {
		r := history.Record{ID: id, Kind: history.KindDeploy, Host: "web-1", Who: "ci", Started: t0.Add(time.Duration(i) * time.Hour),
			To: "v2", Result: history.ResultOK, HostResult: history.ResultOK}
		if err := c.AppendHistory(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	err := c.AppendHistory(ctx, history.Record{ID: "d3", Kind: history.KindDeploy, Host: "web-2", To: "v2", Result: history.ResultOK})
	if !errors.Is(err, agentapi.ErrBadRequest) {
		t.Fatalf("another host's record = %v; want ErrBadRequest", err)
	}
	stop()

	_, c, stop = start()
	defer stop()
	recs, err := c.History(ctx, 0)
	if err != nil || len(recs) != 2 || recs[0].ID != "d2" || recs[1].ID != "d1" {
		t.Fatalf("after a restart: %+v, %v; want d2, d1", recs, err)
	}
	if recs, err := c.History(ctx, 1); err != nil || len(recs) != 1 {
		t.Fatalf("limit 1: %+v, %v", recs, err)
	}
}

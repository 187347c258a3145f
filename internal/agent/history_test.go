package agent

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/history"
	"github.com/mythex/mythex/internal/runtime/process"
)

// TestAgent_History: the agent keeps its host's deploy records across a
// restart, serves them newest first, and refuses another host's record.
func TestAgent_History(t *testing.T) {
	t.Parallel()
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

// TestAgent_Timeline: a deploy's recording round-trips through the agent's
// API and its SQLite store, across a restart, byte for byte and decodable;
// the listing says which records have one; what the agent refuses it
// refuses with a status the client maps, and an agent that predates
// timelines reads as "none kept".
func TestAgent_Timeline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := func() (*agentapi.Client, func()) {
		rt, err := process.New(process.Options{StateDir: filepath.Join(dir, "runtime")})
		if err != nil {
			t.Fatal(err)
		}
		a, err := New(Config{Host: "web-1", StateDir: dir, Runtime: rt, RuntimeName: "process"})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(a.Handler(testToken))
		return agentapi.NewClient(srv.URL, testToken, nil), func() { srv.Close(); a.Close(); rt.Close() }
	}
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rec := deployrec.Recording{Format: deployrec.FormatVersion, Command: "mythex deploy", CreatedAt: t0, Deploys: []deployrec.Deploy{{
		From: "v1", Version: "v2", Hosts: []string{"web-1"}, Start: t0, End: t0.Add(time.Minute),
		Events: []deploy.Event{{At: t0.Add(time.Second), Host: "web-1", Phase: deploy.PhaseDrain, Kind: deploy.EventBegin}},
		Probe:  &deployrec.Probe{URL: "http://lb/", Rate: 10, StartedAt: t0},
	}}}
	for s := range 60 {
		rec.Deploys[0].Probe.Seconds = append(rec.Deploys[0].Probe.Seconds, deployrec.Second{Second: s, Counts: deployrec.Counts{Requests: 10, OK: 10}})
	}
	blob, err := deployrec.Encode(rec)
	if err != nil {
		t.Fatal(err)
	}

	c, stop := start()
	for i, id := range []string{"d1", "d2"} {
		r := history.Record{ID: id, Kind: history.KindDeploy, Host: "web-1", Who: "ci", Started: t0.Add(time.Duration(i) * time.Hour),
			To: "v2", Result: history.ResultOK, HostResult: history.ResultOK}
		if err := c.AppendHistory(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.PutTimeline(ctx, "d2", blob); err != nil {
		t.Fatal(err)
	}
	refused := []struct {
		name string
		id   string
		data []byte
		want error
	}{
		{"no record of the deploy", "d9", blob, agentapi.ErrNotFound},
		{"over the bound", "d1", append([]byte("{"), make([]byte, history.MaxTimeline)...), agentapi.ErrBadRequest},
		{"not a recording", "d1", []byte("MZ\x90\x00"), agentapi.ErrBadRequest},
	}
	for _, r := range refused {
		if err := c.PutTimeline(ctx, r.id, r.data); !errors.Is(err, r.want) {
			t.Errorf("%s: PutTimeline = %v; want %v", r.name, err, r.want)
		}
	}
	stop()

	c, stop = start()
	defer stop()
	got, err := c.Timeline(ctx, "d2")
	if err != nil {
		t.Fatal(err)
	}
	back, err := deployrec.Decode(got)
	if err != nil || len(back.Deploys) != 1 || len(back.Deploys[0].Probe.Seconds) != 60 || back.Deploys[0].Events[0].Phase != deploy.PhaseDrain {
		t.Fatalf("the timeline read back after a restart: %v; want the recording stored (60 seconds, its drain)", err)
	}
	if _, err := c.Timeline(ctx, "d1"); !errors.Is(err, agentapi.ErrNotFound) {
		t.Errorf("Timeline of a deploy recorded without one = %v; want ErrNotFound", err)
	}
	recs, err := c.HistoryOf(ctx, "d2")
	if err != nil || len(recs) != 1 || !recs[0].Timeline {
		t.Errorf("HistoryOf(d2) = %+v, %v; want its record, with a timeline", recs, err)
	}
	if recs, _ := c.History(ctx, 0); len(recs) != 2 || !recs[0].Timeline || recs[1].Timeline {
		t.Errorf("History = %+v; want d2 with a timeline, d1 without", recs)
	}

	// An agent from before timelines: no such route.
	old := httptest.NewServer(http.NotFoundHandler())
	defer old.Close()
	if _, err := agentapi.NewClient(old.URL, testToken, nil).Timeline(ctx, "d2"); !errors.Is(err, agentapi.ErrNotFound) {
		t.Errorf("an old agent's answer = %v; want ErrNotFound", err)
	}
}

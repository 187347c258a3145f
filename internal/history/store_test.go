package history

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func rec(id, host, result string, started time.Time) Record {
	return Record{ID: id, Kind: KindDeploy, Host: host, Who: "deploy v2 by ci", Started: started, Ended: started.Add(time.Minute),
		From: "v1", To: "v2", Result: result, HostResult: result, Phases: []Phase{{Phase: "drain", Seconds: 1.5}}}
}

func TestStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", DBFile)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, id := range []string{"d1", "d2", "d3"} {
		if err := s.Append(ctx, rec(id, "web-1", ResultOK, t0.Add(time.Duration(i)*time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	// A retried write replaces, never duplicates.
	if err := s.Append(ctx, rec("d3", "web-1", ResultFailed, t0.Add(2*time.Hour))); err != nil {
		t.Fatal(err)
	}
	got, err := s.List(ctx, 2)
	if err != nil || len(got) != 2 || got[0].ID != "d3" || got[0].Result != ResultFailed || got[1].ID != "d2" {
		t.Fatalf("List(2) = %+v, %v; want d3 (failed), d2", got, err)
	}
	if got[0].Phases[0].Seconds != 1.5 {
		t.Errorf("phases not kept: %+v", got[0].Phases)
	}
	s.Close()
	// The record survives a restart of the agent.
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if all, err := s.List(ctx, 0); err != nil || len(all) != 3 {
		t.Fatalf("after reopening: %d records, %v; want 3", len(all), err)
	}
	bad := []Record{
		{},
		{ID: "x", Kind: KindDeploy, Host: "web-1", To: "v2", Result: "maybe"},
		{ID: strings.Repeat("x", 200), Kind: KindDeploy, Host: "web-1", To: "v2", Result: ResultOK},
		{ID: "x", Kind: KindDeploy, Host: "web-1", To: "v2", Result: ResultOK, Error: strings.Repeat("e", 100<<10)},
	}
	for i, r := range bad {
		if err := s.Append(ctx, r); !errors.Is(err, ErrInvalid) {
			t.Errorf("bad record %d: Append = %v, want ErrInvalid", i, err)
		}
	}
}

func TestMerge(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	recs := []Record{
		rec("d1", "web-2", ResultOK, t0),
		rec("d2", "web-2", ResultRolledBack, t0.Add(time.Hour)),
		rec("d1", "web-1", ResultOK, t0),
		rec("d2", "web-1", ResultFailed, t0.Add(time.Hour)),
	}
	recs[3].From = "v0"
	got := Merge(recs, 0)
	if len(got) != 2 || got[0].ID != "d2" || got[1].ID != "d1" {
		t.Fatalf("Merge = %+v; want d2 then d1", got)
	}
	if d := got[0]; d.Result != ResultFailed || len(d.Hosts) != 2 || d.Hosts[0].Host != "web-1" || strings.Join(d.From, ",") != "v0,v1" {
		t.Errorf("d2 = %+v; want the worst result (failed), both hosts in order, from v0,v1", d)
	}
	if one := Merge(recs, 1); len(one) != 1 || one[0].ID != "d2" {
		t.Errorf("Merge(limit 1) = %+v", one)
	}
}

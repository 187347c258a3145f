package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStore_Timeline: a deploy's timeline is kept beside its record, read
// back byte for byte after a reopen, said by List and Find, bounded, and
// refused without its record or when it is not a recording.
func TestStore_Timeline(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), DBFile)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i, id := range []string{"d1", "d2"} {
		if err := s.Append(ctx, rec(id, "web-1", ResultOK, t0.Add(time.Duration(i)*time.Hour))); err != nil {
			t.Fatal(err)
		}
	}
	blob := append([]byte{0x1f, 0x8b}, bytes.Repeat([]byte{7}, 300<<10)...)
	if err := s.PutTimeline(ctx, "d2", "web-1", blob); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Timeline(ctx, "d2", "web-1"); err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("Timeline(d2) = %d bytes, %v; want the %d stored", len(got), err, len(blob))
	}
	if _, err := s.Timeline(ctx, "d1", "web-1"); !errors.Is(err, ErrNoTimeline) {
		t.Errorf("Timeline(d1) = %v; want ErrNoTimeline", err)
	}
	list, err := s.List(ctx, 0)
	if err != nil || len(list) != 2 || !list[0].Timeline || list[1].Timeline {
		t.Fatalf("List = %+v, %v; want d2 with a timeline, d1 without", list, err)
	}
	found, err := s.Find(ctx, "d2")
	if err != nil || len(found) != 1 || !found[0].Timeline {
		t.Fatalf("Find(d2) = %+v, %v", found, err)
	}
	if none, err := s.Find(ctx, "nope"); err != nil || len(none) != 0 {
		t.Errorf("Find(nope) = %+v, %v; want nothing", none, err)
	}
	// A record rewritten (a retried append) keeps its timeline, and what
	// a client sends as Timeline is never stored as such.
	r := rec("d1", "web-1", ResultOK, t0)
	r.Timeline = true
	if err := s.Append(ctx, r); err != nil {
		t.Fatal(err)
	}
	if found, _ := s.Find(ctx, "d1"); len(found) != 1 || found[0].Timeline {
		t.Errorf("a record sent with timeline=true reads %+v; want no timeline", found)
	}

	bad := []struct {
		name string
		id   string
		data []byte
		want error
	}{
		{"empty", "d1", nil, ErrInvalid},
		{"too large", "d1", append([]byte("{"), make([]byte, MaxTimeline)...), ErrInvalid},
		{"not a recording", "d1", []byte("#!/bin/sh\nrm -rf /"), ErrInvalid},
		{"no record of the deploy", "d9", []byte("{}"), ErrNoRecord},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			if err := s.PutTimeline(ctx, c.id, "web-1", c.data); !errors.Is(err, c.want) {
				t.Errorf("PutTimeline = %v; want %v", err, c.want)
			}
		})
	}
}

// TestStore_TimelinePruned: a store keeps the newest KeepTimelines
// timelines (here lowered to 3); older deploys keep their records.
func TestStore_TimelinePruned(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const keep = 3
	s.keepTimelines = keep
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	n := keep + 3
	for i := range n {
		id := fmt.Sprintf("d%03d", i)
		if err := s.Append(ctx, rec(id, "web-1", ResultOK, t0.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatal(err)
		}
		if err := s.PutTimeline(ctx, id, "web-1", []byte(`{"format":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List(ctx, 0)
	if err != nil || len(list) != n {
		t.Fatalf("List = %d records, %v; want %d", len(list), err, n)
	}
	var with []string
	for _, r := range list {
		if r.Timeline {
			with = append(with, r.ID)
		}
	}
	if want := []string{"d005", "d004", "d003"}; strings.Join(with, ",") != strings.Join(want, ",") {
		t.Errorf("timelines kept of %v; want the newest %d: %v", with, keep, want)
	}
}

func TestReadTimeline(t *testing.T) {
	ctx := context.Background()
	d := Deploy{ID: "d1", Hosts: []Record{{Host: "web-1", Timeline: true}, {Host: "web-2"}, {Host: "web-3", Timeline: true}}}
	decode := func(b []byte) (string, error) {
		if string(b) == "corrupt" {
			return "", errors.New("corrupt recording")
		}
		return string(b), nil
	}
	cases := []struct {
		name     string
		d        Deploy
		serve    map[string]string // host → what it serves; missing: unreachable
		want     string
		wantHost string
		wantErr  string
	}{
		{"the first host that keeps one", d, map[string]string{"web-1": "a", "web-3": "b"}, "a", "web-1", ""},
		{"a corrupt one is passed over", d, map[string]string{"web-1": "corrupt", "web-3": "b"}, "b", "web-3", ""},
		{"an unreachable host is passed over", d, map[string]string{"web-3": "b"}, "b", "web-3", ""},
		{"none could be read", d, map[string]string{"web-1": "corrupt"}, "", "", "host web-1: corrupt recording"},
		{"no host keeps one", Deploy{ID: "d0", Hosts: []Record{{Host: "web-1"}}}, nil, "", "", "this deploy was recorded without a timeline"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			get := func(_ context.Context, host string) ([]byte, error) {
				b, ok := c.serve[host]
				if !ok {
					return nil, errors.New("unreachable")
				}
				return []byte(b), nil
			}
			got, host, err := ReadTimeline(ctx, c.d, get, decode)
			if got != c.want || host != c.wantHost || (c.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
				t.Errorf("ReadTimeline = %q from %q, %v; want %q from %q, error %q", got, host, err, c.want, c.wantHost, c.wantErr)
			}
		})
	}
}

func TestPick(t *testing.T) {
	ds := []Deploy{{ID: "d2"}, {ID: "d1"}}
	cases := []struct {
		name, id, want string
		deploys        []Deploy
		err            error
	}{
		{"the newest without an id", "", "d2", ds, nil},
		{"by id", "d1", "d1", ds, nil},
		{"an unknown id", "d9", "", ds, ErrNotFound},
		{"an empty history", "", "", nil, ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Pick(c.deploys, c.id)
			if got.ID != c.want || !errors.Is(err, c.err) {
				t.Errorf("Pick = %q, %v; want %q, %v", got.ID, err, c.want, c.err)
			}
		})
	}
}

package publish

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/mythex/mythex/internal/platform"
)

func openTestStore(t *testing.T) *Store {
	t.Helper()
	s, err := OpenStore(filepath.Join(t.TempDir(), "state", DBFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStore_CreateGetSave(t *testing.T) {
	t.Parallel() // its own store file
	ctx := context.Background()
	s := openTestStore(t)
	r, err := s.Create(ctx, Release{App: "api", Config: platform.Config{Image: "app:v1", Env: map[string]string{"K": "v"}}, Status: ReleasePending, CreatedAt: at(0)})
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "v1" || r.Seq != 1 {
		t.Fatalf("first release = %s (seq %d), want v1", r.ID, r.Seq)
	}
	r2, err := s.Create(ctx, Release{App: "api", Config: platform.Config{Image: "app:v2"}, Status: ReleasePending, CreatedAt: at(10)})
	if err != nil || r2.ID != "v2" {
		t.Fatalf("second release = %s, %v; want v2", r2.ID, err)
	}
	other, err := s.Create(ctx, Release{App: "web", Config: platform.Config{Image: "web:1"}, CreatedAt: at(0)})
	if err != nil || other.ID != "v1" {
		t.Fatalf("other app's first release = %s, %v; want v1 (numbered per app)", other.ID, err)
	}
	r.Status, r.LiveAt, r.Verdict = ReleaseLive, at(30), &Verdict{Status: StatusLive, Looks: 3}
	if err := s.Save(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "api", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != ReleaseLive || !got.LiveAt.Equal(at(30)) || got.Verdict == nil || got.Verdict.Looks != 3 || got.Config.Env["K"] != "v" {
		t.Errorf("Get after Save = %+v", got)
	}
	if _, err := s.Get(ctx, "api", "v9"); !errors.Is(err, ErrReleaseNotFound) {
		t.Errorf("Get(v9) error = %v, want ErrReleaseNotFound", err)
	}
	if err := s.Save(ctx, Release{App: "api", ID: "v9", Seq: 9}); !errors.Is(err, ErrReleaseNotFound) {
		t.Errorf("Save(v9) error = %v, want ErrReleaseNotFound", err)
	}
	list, err := s.List(ctx, "api")
	if err != nil || len(list) != 2 || list[0].ID != "v2" || list[1].ID != "v1" {
		t.Errorf("List(api) = %v, %v; want v2, v1", ids(list), err)
	}
}

func ids(rs []Release) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.App+"/"+r.ID)
	}
	return out
}

// TestStore_LastGood is case capistrano-2120-keep-releases: four failed
// publishes after a good one must not push the good one out; the rollback
// target stays the last release that was live.
func TestStore_LastGood(t *testing.T) {
	t.Parallel() // its own store file
	ctx := context.Background()
	s := openTestStore(t)
	if _, ok, err := s.LastGood(ctx, "api", ""); ok || err != nil {
		t.Fatalf("LastGood on an empty store = %v, %v; want none", ok, err)
	}
	good, _ := s.Create(ctx, Release{App: "api", Status: ReleaseLive, Config: platform.Config{Image: "app:v1"}})
	for i := 0; i < 4; i++ {
		if _, err := s.Create(ctx, Release{App: "api", Status: ReleaseRolledBack, Config: platform.Config{Image: "app:broken"}}); err != nil {
			t.Fatal(err)
		}
	}
	lg, ok, err := s.LastGood(ctx, "api", "")
	if err != nil || !ok || lg.ID != good.ID {
		t.Fatalf("LastGood after 4 failures = %s, %v, %v; want %s", lg.ID, ok, err, good.ID)
	}
	next, _ := s.Create(ctx, Release{App: "api", Status: ReleaseLive, Config: platform.Config{Image: "app:v6"}})
	if lg, _, _ := s.LastGood(ctx, "api", ""); lg.ID != next.ID {
		t.Errorf("LastGood after a success = %s, want %s", lg.ID, next.ID)
	}
	// Judging or rolling back `next` itself: the target is the one before.
	if lg, ok, _ := s.LastGood(ctx, "api", next.ID); !ok || lg.ID != good.ID {
		t.Errorf("LastGood except %s = %s, want %s", next.ID, lg.ID, good.ID)
	}
	if all, _ := s.List(ctx, "api"); len(all) != 6 {
		t.Errorf("releases kept = %d, want all 6 (nothing is deleted)", len(all))
	}
}

func TestStore_Current(t *testing.T) {
	t.Parallel() // its own store file
	ctx := context.Background()
	s := openTestStore(t)
	if _, ok, err := s.Current(ctx, "api"); ok || err != nil {
		t.Fatalf("Current on empty store = %v, %v", ok, err)
	}
	r1, _ := s.Create(ctx, Release{App: "api", Status: ReleaseLive})
	r2, _ := s.Create(ctx, Release{App: "api", Status: ReleaseLive})
	for _, id := range []string{r1.ID, r2.ID, r1.ID} {
		if err := s.SetCurrent(ctx, "api", id); err != nil {
			t.Fatal(err)
		}
		cur, ok, err := s.Current(ctx, "api")
		if err != nil || !ok || cur.ID != id {
			t.Errorf("Current after SetCurrent(%s) = %s, %v, %v", id, cur.ID, ok, err)
		}
	}
	apps, err := s.Apps(ctx)
	if err != nil || len(apps) != 1 || apps[0] != "api" {
		t.Errorf("Apps() = %v, %v", apps, err)
	}
}

func TestStore_ReopenKeepsReleases(t *testing.T) {
	t.Parallel() // its own store file
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), DBFile)
	s, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, Release{App: "api", Status: ReleaseLive, Config: platform.Config{Image: "app:v1"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.Get(ctx, "api", "1")
	if err != nil || r.Config.Image != "app:v1" {
		t.Errorf("after reopen Get = %+v, %v", r, err)
	}
}

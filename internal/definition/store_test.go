package definition

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func openStore(t *testing.T) *Store {
	t.Helper()
	s, err := OpenStore(filepath.Join(t.TempDir(), "definitions"))
	if err != nil {
		t.Fatalf("OpenStore: %v", err)
	}
	return s
}

func mustPublish(t *testing.T, s *Store, d *Definition) {
	t.Helper()
	changed, err := s.Publish(d)
	if err != nil {
		t.Fatalf("Publish %s: %v", d.Version, err)
	}
	if !changed {
		t.Fatalf("Publish %s: not changed", d.Version)
	}
}

func encoded(t *testing.T, d *Definition) []byte {
	t.Helper()
	b, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStore_Empty(t *testing.T) {
	s := openStore(t)
	for _, get := range []func() (*Definition, error){s.Current, s.Previous, s.LastGood} {
		if _, err := get(); !errors.Is(err, ErrNotFound) {
			t.Errorf("err = %v, want ErrNotFound", err)
		}
	}
	if _, err := s.Rollback(); !errors.Is(err, ErrNotFound) {
		t.Errorf("Rollback on empty store: %v, want ErrNotFound", err)
	}
	if err := s.MarkGood("ab"); !errors.Is(err, ErrNotFound) {
		t.Errorf("MarkGood on empty store: %v, want ErrNotFound", err)
	}
}

func TestStore_PublishAndRollback(t *testing.T) {
	s := openStore(t)
	v1, v2 := testDefinition(t, "v1"), testDefinition(t, "v2")
	mustPublish(t, s, v1)
	if err := s.MarkGood(v1.Hash); err != nil {
		t.Fatalf("MarkGood: %v", err)
	}
	mustPublish(t, s, v2)

	refs, err := s.Refs()
	if err != nil {
		t.Fatal(err)
	}
	if refs != (Refs{Current: v2.Hash, Previous: v1.Hash, LastGood: v1.Hash}) {
		t.Fatalf("refs after publish = %+v", refs)
	}

	restored, err := s.Rollback()
	if err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	cur, err := s.Bytes(RefCurrent)
	if err != nil {
		t.Fatal(err)
	}
	// The previous definition is restored byte for byte.
	if !bytes.Equal(cur, encoded(t, v1)) || restored.Hash != v1.Hash {
		t.Errorf("restored definition differs from the published v1:\n%s\n%s", cur, encoded(t, v1))
	}
	// Rollback never deletes the version it leaves: it becomes previous.
	prev, err := s.Previous()
	if err != nil || prev.Hash != v2.Hash {
		t.Errorf("previous after rollback = %v, %v; want v2 kept", prev, err)
	}
	if lg, err := s.LastGood(); err != nil || lg.Hash != v1.Hash {
		t.Errorf("last good changed by rollback: %v %v", lg, err)
	}
}

func TestStore_PublishSameHashIsNoop(t *testing.T) {
	s := openStore(t)
	v1, v2 := testDefinition(t, "v1"), testDefinition(t, "v2")
	mustPublish(t, s, v1)
	mustPublish(t, s, v2)
	changed, err := s.Publish(testDefinition(t, "v2"))
	if err != nil || changed {
		t.Fatalf("Publish same = %v, %v; want no change", changed, err)
	}
	refs, _ := s.Refs()
	if refs.Previous != v1.Hash {
		t.Errorf("re-publishing current moved previous: %+v", refs)
	}
}

func TestStore_MarkGood(t *testing.T) {
	s := openStore(t)
	v1, v2 := testDefinition(t, "v1"), testDefinition(t, "v2")
	mustPublish(t, s, v1)
	mustPublish(t, s, v2)
	if err := s.MarkGood(v1.Hash); !errors.Is(err, ErrNotCurrent) {
		t.Errorf("MarkGood(previous) = %v, want ErrNotCurrent", err)
	}
	if err := s.MarkGood(v2.Hash); err != nil {
		t.Fatalf("MarkGood(current): %v", err)
	}
	if err := s.MarkGood(v2.Hash); err != nil {
		t.Errorf("MarkGood again: %v, want no-op", err)
	}
	lg, err := s.LastGood()
	if err != nil || lg.Hash != v2.Hash {
		t.Errorf("LastGood = %v, %v", lg, err)
	}
}

func TestStore_LastGoodSurvivesLaterPublishes(t *testing.T) {
	s := openStore(t)
	v1 := testDefinition(t, "v1")
	mustPublish(t, s, v1)
	if err := s.MarkGood(v1.Hash); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v2", "v3", "v4"} {
		mustPublish(t, s, testDefinition(t, v))
	}
	lg, err := s.Bytes(RefLastGood)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(lg, encoded(t, v1)) {
		t.Errorf("last good not kept byte for byte")
	}
	// Only the three referenced definitions remain on disk.
	var blobs []string
	entries, _ := os.ReadDir(s.Dir())
	for _, e := range entries {
		if blobRE.MatchString(e.Name()) {
			blobs = append(blobs, e.Name())
		}
	}
	refs, _ := s.Refs()
	want := []string{refs.Current + ".json", refs.Previous + ".json", refs.LastGood + ".json"}
	slices.Sort(blobs)
	slices.Sort(want)
	if !slices.Equal(blobs, want) {
		t.Errorf("files = %v, want %v", blobs, want)
	}
}

func TestStore_Reopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "defs")
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	v1, v2 := testDefinition(t, "v1"), testDefinition(t, "v2")
	mustPublish(t, s, v1)
	mustPublish(t, s, v2)
	s2, err := OpenStore(dir)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	cur, err := s2.Current()
	if err != nil || cur.Hash != v2.Hash {
		t.Errorf("current after reopen = %v, %v", cur, err)
	}
	fi, err := os.Stat(filepath.Join(dir, v2.Hash+".json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("definition file mode = %v, %v; want 0600 (environments may hold secrets)", fi, err)
	}
}

func TestStore_PublishRefusesUnsealed(t *testing.T) {
	s := openStore(t)
	d := testDefinition(t, "v1")
	d.Services[0].Image = "changed-after-seal"
	if _, err := s.Publish(d); !errors.Is(err, ErrNotSealed) {
		t.Errorf("Publish modified = %v, want ErrNotSealed", err)
	}
	bad := testDefinition(t, "v1")
	bad.Version = "not valid!"
	if _, err := s.Publish(bad); !errors.Is(err, ErrInvalid) {
		t.Errorf("Publish invalid = %v, want ErrInvalid", err)
	}
	if _, err := s.Current(); !errors.Is(err, ErrNotFound) {
		t.Errorf("a refused publish changed the store: %v", err)
	}
}

func TestStore_Corrupt(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, dir, hash string)
	}{
		{"definition edited", func(t *testing.T, dir, hash string) {
			p := filepath.Join(dir, hash+".json")
			b, _ := os.ReadFile(p)
			if err := os.WriteFile(p, bytes.Replace(b, []byte("v1"), []byte("v9"), 1), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"definition deleted", func(t *testing.T, dir, hash string) {
			if err := os.Remove(filepath.Join(dir, hash+".json")); err != nil {
				t.Fatal(err)
			}
		}},
		{"refs garbage", func(t *testing.T, dir, _ string) {
			if err := os.WriteFile(filepath.Join(dir, refsFile), []byte("{nope"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "defs")
			s, err := OpenStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			v1 := testDefinition(t, "v1")
			mustPublish(t, s, v1)
			tc.damage(t, dir, v1.Hash)
			if _, err := s.Current(); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Current = %v, want ErrCorrupt", err)
			}
			if _, err := OpenStore(dir); !errors.Is(err, ErrCorrupt) {
				t.Errorf("OpenStore = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestStore_PendingUntilVerified(t *testing.T) {
	s := openStore(t)
	v1, v2, v3, v4 := testDefinition(t, "v1"), testDefinition(t, "v2"), testDefinition(t, "v3"), testDefinition(t, "v4")
	if err := s.MarkVerified("ab"); !errors.Is(err, ErrNotFound) {
		t.Errorf("MarkVerified on empty store = %v, want ErrNotFound", err)
	}
	mustPublish(t, s, v1)
	if refs, _ := s.Refs(); refs.HalfDeployed() {
		t.Error("a plain Publish counts as half deployed")
	}
	if _, err := s.PublishPending(v2); err != nil {
		t.Fatal(err)
	}
	if refs, _ := s.Refs(); !refs.HalfDeployed() {
		t.Errorf("refs %+v after PublishPending: want half deployed", refs)
	}
	if err := s.MarkVerified(v1.Hash); !errors.Is(err, ErrNotCurrent) {
		t.Errorf("MarkVerified(previous) = %v, want ErrNotCurrent", err)
	}
	if err := s.MarkVerified(v2.Hash); err != nil {
		t.Fatal(err)
	}
	if refs, _ := s.Refs(); refs.HalfDeployed() || refs.Verified != v2.Hash {
		t.Errorf("refs %+v after MarkVerified: want v2 verified, not half deployed", refs)
	}
	// A rollback away from a pending definition ends its pending state.
	if _, err := s.PublishPending(v3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rollback(); err != nil {
		t.Fatal(err)
	}
	if refs, _ := s.Refs(); refs.HalfDeployed() || refs.Pending != "" {
		t.Errorf("refs %+v after rolling back from pending v3: want nothing pending", refs)
	}
	// Verified is dropped once no other ref names its hash.
	mustPublish(t, s, v4)
	mustPublish(t, s, v1)
	if refs, _ := s.Refs(); refs.Verified != "" {
		t.Errorf("verified = %q after it left the store, want empty", refs.Verified)
	}
}

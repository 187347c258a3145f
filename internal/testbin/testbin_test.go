package testbin

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/flocks"
)

// TestBuild_SharedAndUpToDate: a second build of the same package, as another
// test process would run it, returns the same file and does not link again
// (the file is not replaced: go build may touch its mtime, but a link writes
// a new file and renames it into place).
func TestBuild_SharedAndUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	p1, err := Build(App)
	if err != nil {
		t.Fatal(err)
	}
	st1, err := os.Stat(p1)
	if err != nil {
		t.Fatal(err)
	}
	Cleanup() // as a fresh process: no memory of the first build
	p2, err := Build(App)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := os.Stat(p2)
	if err != nil {
		t.Fatal(err)
	}
	if p1 != p2 {
		t.Errorf("second build at %s, want the shared %s", p2, p1)
	}
	if !os.SameFile(st1, st2) {
		t.Error("the up-to-date binary was linked again")
	}
}

// TestSetParallel: without -parallel on the command line it sets the
// binary's parallelism; with it, the command line wins.
func TestSetParallel(t *testing.T) {
	f := flag.Lookup("test.parallel")
	before := f.Value.String()
	given := false
	flag.Visit(func(fl *flag.Flag) { given = given || fl.Name == "test.parallel" })
	SetParallel(7)
	defer func() { _ = f.Value.Set(before) }()
	want := "7"
	if given {
		want = before
	}
	if got := f.Value.String(); got != want {
		t.Errorf("-parallel = %s after SetParallel(7), want %s (given on the command line: %v)", got, want, given)
	}
}

// TestBuild_StampSparesGoBuild: once a binary and its stamp are written, a
// test process whose module files have not changed uses the binary without
// running the go command at all (here: there is none on PATH).
func TestBuild_StampSparesGoBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	p1, err := Build(App)
	if err != nil {
		t.Fatal(err)
	}
	Cleanup()
	t.Setenv("PATH", t.TempDir()) // no go command to run
	p2, err := Build(App)
	if err != nil {
		t.Fatalf("build with an up-to-date stamp ran go: %v", err)
	}
	if p1 != p2 {
		t.Errorf("second build at %s, want %s", p2, p1)
	}
}

// TestSourceStamp: the stamp changes when a file of the module is edited
// (size or time), added or removed, and with the build's settings; it does
// not change when nothing did, nor with what is under .git.
func TestSourceStamp(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string, mtime time.Time) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	write("go.mod", "module x\n", t0)
	write("cmd/x/main.go", "package main\n", t0)
	stamp := func() string {
		t.Helper()
		s, err := sourceStamp(root, "x/cmd/x", "0")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := stamp()
	if again := stamp(); again != base {
		t.Fatalf("stamp changed with nothing changed: %s then %s", base, again)
	}
	write(".git/index", "anything", t0.Add(time.Hour))
	if s := stamp(); s != base {
		t.Errorf("a change under .git changed the stamp")
	}
	cgo, err := sourceStamp(root, "x/cmd/x", "1")
	if err != nil {
		t.Fatal(err)
	}
	if cgo == base {
		t.Errorf("CGO_ENABLED=1 has the stamp of CGO_ENABLED=0")
	}
	steps := []struct {
		name   string
		change func()
	}{
		{"edited, same size, later", func() { write("cmd/x/main.go", "package mian\n", t0.Add(time.Nanosecond)) }},
		{"edited, other size, same time", func() { write("cmd/x/main.go", "package main // x\n", t0.Add(time.Nanosecond)) }},
		{"file added", func() { write("internal/y/y.go", "package y\n", t0) }},
		{"file removed", func() {
			if err := os.Remove(filepath.Join(root, "internal/y/y.go")); err != nil {
				t.Fatal(err)
			}
		}},
		{"dependency changed", func() { write("go.sum", "example.com/z v1.0.0 h1:x\n", t0) }},
	}
	prev := base
	for _, st := range steps {
		st.change()
		s := stamp()
		if s == prev {
			t.Errorf("%s: the stamp did not change", st.name)
		}
		prev = s
	}
}

// TestExclusive: while a test holds the lock, another taker is refused and
// the holder file names the test; when the test ends the lock is free.
func TestExclusive(t *testing.T) {
	dir, _, err := sharedDir()
	if err != nil {
		t.Fatal(err)
	}
	const name = "testbin-self-test"
	path := filepath.Join(dir, name+".exclusive")
	other := flocks.New(path, "the test lock "+name)
	var holderSeen string
	t.Run("holder", func(t *testing.T) {
		Exclusive(t, name)
		holderSeen = flocks.Holder(path)
		if err := other.TryLock("another test"); !errors.Is(err, flocks.ErrHeld) {
			t.Errorf("TryLock while held = %v, want ErrHeld", err)
		}
	})
	if holderSeen != "TestExclusive/holder" {
		t.Errorf("holder while held = %q, want the test's name", holderSeen)
	}
	if err := other.TryLock("another test"); err != nil {
		t.Fatalf("TryLock after the holder ended = %v, want the lock", err)
	}
	_ = other.Unlock()
}

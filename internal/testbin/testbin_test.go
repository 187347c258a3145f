package testbin

import (
	"flag"
	"os"
	"testing"
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

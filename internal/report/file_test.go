package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/deployrec"
)

func TestCheckPath(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, path string
		bad        bool
	}{
		{"none", "", false},
		{"html in a directory that exists", filepath.Join(dir, "r.html"), false},
		{"not html", filepath.Join(dir, "r.txt"), true},
		{"a directory", dir + ".html", true},
		{"missing directory", filepath.Join(dir, "nope", "r.html"), true},
	}
	if err := os.Mkdir(dir+".html", 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPath(tc.path)
			if errors.Is(err, ErrBadPath) != tc.bad || (err != nil && !tc.bad) {
				t.Errorf("CheckPath(%q) = %v, want bad %v", tc.path, err, tc.bad)
			}
		})
	}
}

func TestWriteFile_SaysWhereItWent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.html")
	var progress strings.Builder
	if err := WriteFile(path, deployrec.Recording{}, &progress); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "<html") {
		t.Fatalf("report file: %v (%d bytes)", err, len(b))
	}
	if !strings.Contains(progress.String(), "report: "+path) {
		t.Errorf("progress %q does not name the file", progress.String())
	}
}

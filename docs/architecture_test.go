// Package docs_test checks that docs/architecture.md stays a map a newcomer
// can use alone: every package is on it, every file it names exists, every
// package says what it is in a doc comment, and no comment or document cites
// a file outside the repository.
package docs_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository root, seen from docs/.
const root = ".."

// packageDirs lists every directory of the module holding non-test Go files.
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			if rel != "." && !slices.Contains(dirs, rel) {
				dirs = append(dirs, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

func architecture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestArchitecture_NamesEveryPackage(t *testing.T) {
	doc := architecture(t)
	for _, dir := range packageDirs(t) {
		if !strings.Contains(doc, "`"+dir+"`") {
			t.Errorf("docs/architecture.md does not name package %s (add it to the Packages table)", dir)
		}
	}
}

func TestArchitecture_FilesExist(t *testing.T) {
	for _, m := range regexp.MustCompile("`([a-z][\\w./-]*\\.go)`").FindAllStringSubmatch(architecture(t), -1) {
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			t.Errorf("docs/architecture.md names %s, which does not exist: %v", m[1], err)
		}
	}
}

func TestEveryPackageHasADocComment(t *testing.T) {
	for _, dir := range packageDirs(t) {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		documented := map[string]bool{} // by package name
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			documented[af.Name.Name] = documented[af.Name.Name] || af.Doc != nil
		}
		for name, ok := range documented {
			if !ok {
				t.Errorf("package %s (%s) has no doc comment: say what it is in a doc.go", name, dir)
			}
		}
	}
}

// TestNoReferenceOutsideTheRepo: comments and docs explain themselves or
// point into docs/; they never cite the design brief, which is not in the
// repository.
func TestNoReferenceOutsideTheRepo(t *testing.T) {
	cite := "DESIGN " + "§"
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !slices.Contains([]string{".go", ".md", ".yml", ".yaml", ".sh"}, filepath.Ext(path)) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, cite) {
				t.Errorf("%s:%d cites %q, a file outside the repository: explain it here or point into docs/", path, i+1, cite)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

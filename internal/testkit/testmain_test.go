package testkit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageExitsThroughTestkit: every package of the module that has
// tests ends its test binary through Main or Exit, never os.Exit, so no
// passing -race binary sleeps the race detector's exit second (Exit's doc).
// A new package without a TestMain fails here, naming the file to add.
func TestEveryPackageExitsThroughTestkit(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from the package directory: %v", err)
	}
	type verdict struct{ hasMain, viaTestkit, osExit bool }
	dirs := map[string]*verdict{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		v := dirs[dir]
		if v == nil {
			v = &verdict{}
			dirs[dir] = v
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != "TestMain" {
				continue
			}
			v.hasMain = true
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch fun := call.Fun.(type) {
				case *ast.SelectorExpr:
					if x, ok := fun.X.(*ast.Ident); ok {
						switch {
						case x.Name == "testkit" && (fun.Sel.Name == "Main" || fun.Sel.Name == "Exit"):
							v.viaTestkit = true
						case x.Name == "os" && fun.Sel.Name == "Exit":
							v.osExit = true
						}
					}
				case *ast.Ident:
					if dir == filepath.Join("internal", "testkit") && (fun.Name == "Main" || fun.Name == "Exit") {
						v.viaTestkit = true
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("found tests in only %d directories under %s: the walk is wrong", len(dirs), root)
	}
	for dir, v := range dirs {
		switch {
		case !v.hasMain:
			t.Errorf("%s: no TestMain; add main_test.go with func TestMain(m *testing.M) { testkit.Main(m) }", dir)
		case !v.viaTestkit || v.osExit:
			t.Errorf("%s: TestMain must end with testkit.Main(m) or testkit.Exit(code), not os.Exit", dir)
		}
	}
}

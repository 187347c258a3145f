// Package testbin builds this module's commands (the mythex binary, the sample
// app) once per test process, for end-to-end tests that run them as real
// processes. It is imported only from _test.go files.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
)

var (
	mu    sync.Mutex
	built = map[string]string{}
	dir   string
)

// Module is this module's import path.
const Module = "github.com/mythex/mythex"

// App is the import path of the sample app.
const App = Module + "/examples/app"

// Mythex is the import path of the mythex command.
const Mythex = Module + "/cmd/mythex"

// Build compiles the package pkg (an import path in this module) with `go build`
// into a directory shared by the test process, once, and returns the binary's
// path. Later calls with the same pkg return the same path. The binary is static
// (CGO_ENABLED=0) so it can also go into a FROM scratch image. Errors carry the
// compiler's output.
func Build(pkg string) (string, error) { return build(pkg, "0") }

// BuildCgo compiles pkg like Build but with CGO_ENABLED=1, as `go run` and
// `go build` do by default on a machine with a C compiler: the binary is
// dynamically linked there. Its path ends in "-cgo".
func BuildCgo(pkg string) (string, error) { return build(pkg, "1") }

func build(pkg, cgo string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	key := pkg + "#cgo=" + cgo
	if p, ok := built[key]; ok {
		return p, nil
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "mythex-testbin-")
		if err != nil {
			return "", fmt.Errorf("testbin: %w", err)
		}
		dir = d
	}
	out := filepath.Join(dir, path.Base(pkg))
	if cgo == "1" {
		out += "-cgo"
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testbin: go build (CGO_ENABLED=%s) %s: %w\n%s", cgo, pkg, err, b)
	}
	built[key] = out
	return out, nil
}

// Cleanup removes every binary built; call it from TestMain after m.Run.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
		dir = ""
		built = map[string]string{}
	}
}

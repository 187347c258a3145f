package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// module is this module's path; StaticBinary builds its command from source.
const module = "github.com/mythex/mythex"

// ErrNoSource is matched (errors.Is) by StaticBinary's error when exe is not
// static and no source of this module or no Go toolchain is at hand to build
// a static one.
var ErrNoSource = errors.New("no mythex source and Go toolchain to build a static binary from")

// StaticBinary returns the path of a statically linked mythex binary for a
// FROM scratch image. It is exe itself when exe is static. Otherwise (a
// binary built with cgo on, as `go run ./cmd/mythex` makes on most machines)
// it builds one with the Go toolchain from the module source found at or
// above the working directory: `go build` with CGO_ENABLED=0 into dir (the
// pure-Go resolver and user lookup are then used: net and os/user are the
// only cgo users mythex has), saying so on progress. The flags are those of a
// plain build so the build cache serves it. No shell is involved.
//
// Errors: ErrNoSource (wrapped, with how to build one by hand) when there is
// no source or no `go`; the compiler's output when the build fails.
func StaticBinary(ctx context.Context, exe, dir string, progress io.Writer) (string, error) {
	err := CheckStatic(exe)
	if err == nil || !errors.Is(err, ErrNotStatic) {
		return exe, err
	}
	src, ok := moduleRoot()
	goTool, lookErr := exec.LookPath("go")
	if !ok || lookErr != nil {
		return "", fmt.Errorf("%w: %w", ErrNoSource, err)
	}
	if progress != nil {
		fmt.Fprintf(progress, "%s is dynamically linked (built with cgo on); building a static mythex for the image (CGO_ENABLED=0)…\n", exe)
	}
	out := filepath.Join(dir, "mythex-static")
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", out, "./cmd/mythex")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build a static mythex in %s: %w\n%s", src, err, b)
	}
	if err := CheckStatic(out); err != nil {
		return "", fmt.Errorf("the static build is not static: %w", err)
	}
	return out, nil
}

// moduleRoot finds the directory of this module's go.mod at or above the
// working directory.
func moduleRoot() (string, bool) {
	d, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if isModule(filepath.Join(d, "go.mod")) {
			if _, err := os.Stat(filepath.Join(d, "cmd", "mythex")); err == nil {
				return d, true
			}
		}
		up := filepath.Dir(d)
		if up == d {
			return "", false
		}
		d = up
	}
}

// isModule reports whether the go.mod at path declares this module.
func isModule(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 2 && fs[0] == "module" {
			return fs[1] == module
		}
	}
	return false
}

// ImageBinary is the static executable an image of mythex is built from:
// binary when given (it must be static), else this process's own binary, or
// — when that is dynamically linked — a static one built from source into
// dir (StaticBinary, saying so on progress). Errors say which binary and how
// to get a static one; ErrNotStatic (wrapped) for a dynamically linked one.
func ImageBinary(ctx context.Context, binary, dir string, progress io.Writer) (string, error) {
	bin := binary
	if bin == "" {
		self, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("cannot find this binary (%v); give one", err)
		}
		// This binary may be dynamically linked (cgo on, as `go run` makes
		// it on most machines): build a static one from source instead.
		if bin, err = StaticBinary(ctx, self, dir, progress); err != nil {
			return "", fmt.Errorf("%w; or give a static one", err)
		}
	}
	if err := CheckStatic(bin); err != nil {
		if errors.Is(err, ErrNotStatic) {
			return "", fmt.Errorf("%w, or give a static one", err)
		}
		return "", err
	}
	return bin, nil
}

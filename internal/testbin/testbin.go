// Package testbin builds this module's commands (the mythex binary, the sample
// app) for end-to-end tests that run them as real processes. It is imported
// only from _test.go files.
//
// `go test ./...` runs one test process per package, and most end-to-end
// packages need the same binaries: linking the mythex binary takes seconds of
// CPU, once per package if each built its own copy. So the binaries live in
// one directory per checkout under the system's temporary directory, shared by
// every test process of that checkout, and a build takes a file lock: the
// first process links, the others wait, then `go build` finds the binary up to
// date (its build ID matches) and leaves it as it is. A changed source makes
// `go build` link again, so a stale binary is never run.
//
// Even an up-to-date `go build` of the mythex command costs about a second
// of CPU (it loads and hashes every package), once per binary per test
// process. So beside each binary lies a stamp: the module's files by path,
// size and modification time, with the build's environment. When the stamp
// still matches, the binary is used without asking `go build`; any edit,
// added or removed file in the module (go.mod and go.sum name the
// dependencies) changes it, and `go build` decides again.
package testbin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/mythex/mythex/internal/flocks"
)

var (
	mu    sync.Mutex
	built = map[string]string{}
)

// Module is this module's import path.
const Module = "github.com/mythex/mythex"

// App is the import path of the sample app.
const App = Module + "/examples/app"

// Mythex is the import path of the mythex command.
const Mythex = Module + "/cmd/mythex"

// Build compiles the package pkg (an import path in this module, or a path
// relative to the test's directory) with `go build`, and returns the binary's
// path. Within a test process later calls with the same pkg return the same
// path at once; across the test processes of one checkout the binary is
// shared (see the package doc). The binary is static (CGO_ENABLED=0) so it can
// also go into a FROM scratch image. Errors carry the compiler's output.
func Build(pkg string) (string, error) { return build(pkg, "0") }

// BuildCgo compiles pkg like Build but with CGO_ENABLED=1, as `go run` and
// `go build` do by default on a machine with a C compiler: the binary is
// dynamically linked there. Its name ends in "-cgo".
func BuildCgo(pkg string) (string, error) { return build(pkg, "1") }

func build(pkg, cgo string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	memo := pkg + "#cgo=" + cgo
	if p, ok := built[memo]; ok {
		return p, nil
	}
	dir, root, err := sharedDir()
	if err != nil {
		return "", fmt.Errorf("testbin: %w", err)
	}
	key := pkg
	if strings.HasPrefix(pkg, ".") {
		abs, err := filepath.Abs(pkg)
		if err != nil {
			return "", fmt.Errorf("testbin: %w", err)
		}
		key = abs
	}
	name := path.Base(filepath.ToSlash(pkg)) + "-" + shortHash(key)
	if cgo == "1" {
		name += "-cgo"
	}
	out := filepath.Join(dir, name)
	lock := flock.New(out + ".lock")
	if err := lock.Lock(); err != nil {
		return "", fmt.Errorf("testbin: lock %s: %w", lock.Path(), err)
	}
	defer lock.Unlock()
	stampPath := out + ".stamp"
	// Taken before the build: an edit while it runs makes the next one
	// ask go build again.
	stamp, stampErr := sourceStamp(root, key, cgo)
	if stampErr == nil && upToDate(out, stampPath, stamp) {
		built[memo] = out
		return out, nil
	}
	_ = os.Remove(stampPath)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testbin: go build (CGO_ENABLED=%s) %s: %w\n%s", cgo, pkg, err, b)
	}
	if stampErr == nil {
		// Written whole or not at all (a rename); a missing stamp only
		// costs the next process a go build.
		tmp := stampPath + ".tmp"
		if os.WriteFile(tmp, []byte(stamp), 0o644) == nil {
			_ = os.Rename(tmp, stampPath)
		}
	}
	built[memo] = out
	return out, nil
}

// upToDate reports whether the binary out exists and the stamp at
// stampPath, written after it was built, equals stamp.
func upToDate(out, stampPath, stamp string) bool {
	if _, err := os.Stat(out); err != nil {
		return false
	}
	b, err := os.ReadFile(stampPath)
	return err == nil && string(b) == stamp
}

// sourceStamp is the hash of what a build of pkg (key) under the module at
// root depends on and a file listing can see: every file of the module
// (but .git) by path, size and modification time, the Go toolchain of this
// test binary, and the environment variables that change a build. Files
// outside the module come from the module cache, named by go.sum.
func sourceStamp(root, key, cgo string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", key, cgo, runtime.Version())
	for _, v := range []string{"GOFLAGS", "GOOS", "GOARCH", "GOAMD64", "GOEXPERIMENT", "GOTOOLCHAIN", "CGO_CFLAGS", "CGO_LDFLAGS", "CC", "GOROOT", "GOPATH", "GOWORK"} {
		fmt.Fprintf(h, "%s=%s\x00", v, os.Getenv(v))
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%v\x00", p, info.Size(), info.ModTime().UnixNano(), info.Mode())
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sharedDir returns (making it) the directory of this checkout's binaries,
// and the module's root directory: the directory is named after the root
// and the build settings, so two checkouts, or two GOFLAGS, never share a
// binary.
func sharedDir() (dir, root string, err error) {
	shared.Lock()
	defer shared.Unlock()
	if shared.dir != "" {
		return shared.dir, shared.root, nil
	}
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(gomod))
	if mod == "" || mod == os.DevNull {
		return "", "", fmt.Errorf("go env GOMOD: not inside a module")
	}
	key := strings.Join([]string{mod, os.Getenv("GOFLAGS"), runtime.GOOS, runtime.GOARCH}, "\x00")
	dir = filepath.Join(os.TempDir(), "mythex-testbin-"+shortHash(key))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	shared.dir, shared.root = dir, filepath.Dir(mod)
	return shared.dir, shared.root, nil
}

// shared is what sharedDir found, kept for the life of the test process.
var shared struct {
	sync.Mutex
	dir, root string
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}

// Cleanup forgets the binaries this process built; call it from TestMain
// after m.Run. The files stay for the checkout's other test processes (which
// may be running them now) and for the next run, like Go's build cache.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	built = map[string]string{}
}

// SetParallel makes the test binary run up to n parallel tests at once
// (go test's -parallel, whose default is GOMAXPROCS) unless -parallel was
// given. For packages of end-to-end tests that each run their own fleet of
// processes and spend their time waiting on the fleet's timings (health
// checks, drains, look-twice windows), not on CPU. Call it from TestMain
// before m.Run.
func SetParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// Exclusive takes the checkout-wide lock named name (mythex's one lock
// type, flocks.Lock, beside the shared binaries; its holder file names the
// test) and holds it until t ends: tests in different packages — different
// test processes of one `go test ./...` — that must not run at the same time
// take the same name. It waits as long as the holder runs; the kernel frees
// the lock of a holder that dies. A failure to lock fails t.
func Exclusive(t testing.TB, name string) {
	t.Helper()
	dir, _, err := sharedDir()
	if err != nil {
		t.Fatal(err)
	}
	l := flocks.New(filepath.Join(dir, name+".exclusive"), "the test lock "+name)
	if err := l.Lock(context.Background(), t.Name(), exclusivePoll); err != nil {
		t.Fatalf("lock %s: %v", name, err)
	}
	t.Cleanup(func() { _ = l.Unlock() })
}

// exclusivePoll is how often Exclusive looks whether its lock is free.
const exclusivePoll = 100 * time.Millisecond

// DockerStartsLock is the Exclusive name of the tests that start many
// containers at once (the Docker demo) and of those that fail when starved
// while they do (the deployer-kill cases, whose new hosts must pass 400 ms
// health checks): two full runs failed when the two overlapped.
const DockerStartsLock = "docker-starts"

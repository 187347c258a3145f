package docker

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/testbin"
)

// dynamicBinary is a dynamically linked Go binary: the sample app built with
// cgo on, as `go run` builds on a machine with a C compiler. StaticBinary
// looks only at how its input is linked, so the small app stands in for a
// cgo mythex (whose link alone took 20 s of this package's run). It skips t
// where a cgo build comes out static.
func dynamicBinary(t *testing.T) string {
	t.Helper()
	dynamic, err := testbin.BuildCgo(testbin.App)
	if err != nil {
		t.Fatal(err)
	}
	if CheckStatic(dynamic) == nil {
		t.Skip("a CGO_ENABLED=1 build is static here (no C compiler?): nothing to replace")
	}
	return dynamic
}

func TestStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mythex")
	}
	t.Parallel() // its own binaries and temporary directories
	static, err := testbin.Build(testbin.Mythex)
	if err != nil {
		t.Fatal(err)
	}
	dynamic := dynamicBinary(t)
	ctx := context.Background()

	t.Run("a static binary is used as it is", func(t *testing.T) {
		var progress bytes.Buffer
		got, err := StaticBinary(ctx, static, t.TempDir(), &progress)
		if err != nil || got != static || progress.Len() != 0 {
			t.Fatalf("StaticBinary(static) = %q, %v (progress %q); want the same path, no build", got, err, progress.String())
		}
	})
	t.Run("a cgo binary is replaced by a static build from source", func(t *testing.T) {
		var progress bytes.Buffer
		got, err := StaticBinary(ctx, dynamic, t.TempDir(), &progress)
		if err != nil {
			t.Fatal(err)
		}
		if got == dynamic {
			t.Fatal("StaticBinary returned the dynamic binary")
		}
		if err := CheckStatic(got); err != nil {
			t.Fatalf("the built binary: %v", err)
		}
		if !strings.Contains(progress.String(), "building a static mythex") {
			t.Errorf("progress %q does not say a build runs", progress.String())
		}
	})
}

// TestStaticBinary_NoSource: outside the module StaticBinary cannot build and
// says how to. Not parallel: it changes the working directory.
func TestStaticBinary_NoSource(t *testing.T) {
	dynamic := dynamicBinary(t)
	t.Chdir(t.TempDir())
	_, err := StaticBinary(context.Background(), dynamic, t.TempDir(), nil)
	if !errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), "CGO_ENABLED=0 go build") {
		t.Fatalf("StaticBinary outside the module = %v; want ErrNoSource with the command to run", err)
	}
}

package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mythex/mythex/internal/testbin"
)

func TestCheckStatic(t *testing.T) {
	text := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := CheckStatic(text); err == nil || errors.Is(err, ErrNotStatic) {
		t.Errorf("a script: %v, want a not-ELF error", err)
	}
	if err := CheckStatic(""); err == nil {
		t.Error("no binary: want an error")
	}
	dynamic := "/bin/ls"
	if _, err := os.Stat(dynamic); err != nil {
		t.Skipf("no dynamically linked %s here", dynamic)
	}
	err := CheckStatic(dynamic)
	if !errors.Is(err, ErrNotStatic) || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("%s: %v, want ErrNotStatic saying how to build a static binary", dynamic, err)
	}
}

func TestCheckStatic_MythexBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the mythex binary")
	}
	bin, err := testbin.Build(testbin.Mythex)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckStatic(bin); err != nil {
		t.Errorf("the CGO_ENABLED=0 mythex binary: %v", err)
	}
}

func TestWriteBuildContext(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bin")
	payload := []byte("\x7fELF not really")
	if err := os.WriteFile(bin, payload, 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeBuildContext(&buf, SampleAppDockerfile(), bin); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&buf)
	got := map[string][]byte{}
	modes := map[string]int64{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		got[h.Name], modes[h.Name] = b, h.Mode
	}
	if !bytes.Equal(got["mythex"], payload) || modes["mythex"] != 0o755 {
		t.Errorf("mythex entry = %q mode %o", got["mythex"], modes["mythex"])
	}
	df := string(got["Dockerfile"])
	for _, want := range []string{
		"FROM scratch\n",
		"COPY mythex /mythex\n",
		`ENTRYPOINT ["/mythex", "sample-app"]`,
		`HEALTHCHECK --interval=5s --timeout=2s --start-period=10s --retries=3 CMD ["/mythex", "sample-app", "check", "http://127.0.0.1:8081/healthz"]`,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q:\n%s", want, df)
		}
	}
	if strings.Count(df, "FROM") != 1 || strings.Contains(df, "RUN") {
		t.Errorf("Dockerfile must be FROM scratch only, no RUN (no shell in the image):\n%s", df)
	}
}

func TestBuildImage_Refuses(t *testing.T) {
	t.Parallel()
	cli := engine(t)
	if _, err := BuildImage(context.Background(), cli, ImageOptions{Binary: "/bin/ls", Tags: []string{"mythex-test/never:" + runID}}); !errors.Is(err, ErrNotStatic) {
		t.Errorf("dynamic binary: %v, want ErrNotStatic", err)
	}
	if _, err := BuildImage(context.Background(), cli, ImageOptions{Binary: "/bin/ls"}); err == nil || !strings.Contains(err.Error(), "tag") {
		t.Errorf("no tag: %v, want an error asking for one", err)
	}
}

func TestBuildImage(t *testing.T) {
	t.Parallel() // the test image is built once, for every test (testImage)
	ref := testImage(t)
	img, err := engine(t).ImageInspect(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	c := img.Config
	if !slices.Equal(c.Entrypoint, []string{"/mythex", "sample-app"}) {
		t.Errorf("entrypoint = %v", c.Entrypoint)
	}
	if c.Healthcheck == nil || !slices.Equal(c.Healthcheck.Test, []string{"CMD", "/mythex", "sample-app", "check", "http://127.0.0.1:8081/healthz"}) {
		t.Errorf("healthcheck = %+v, want exec form", c.Healthcheck)
	}
	if _, ok := c.ExposedPorts["8081/tcp"]; !ok || !slices.Contains(c.Env, "MYTHEX_APP_LISTEN=0.0.0.0:8081") {
		t.Errorf("exposed %v env %v", c.ExposedPorts, c.Env)
	}
	if c.Labels[labelTestRun] != runID {
		t.Errorf("labels = %v", c.Labels)
	}
	if len(img.RootFS.Layers) != 1 {
		t.Errorf("layers = %v, want one: FROM scratch plus the binary", img.RootFS.Layers)
	}
}

package docker

import (
	"archive/tar"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
)

// SampleAppPort is the port the sample app image listens on (0.0.0.0, so a
// published port reaches it) and checks in its HEALTHCHECK, unless the
// container's MYTHEX_APP_LISTEN says otherwise.
const SampleAppPort = 8081

// ErrNotStatic is matched (errors.Is) by BuildImage's error when the binary
// is dynamically linked: a FROM scratch image has no C library to load it.
var ErrNotStatic = errors.New("binary is dynamically linked")

// ImageOptions configure BuildImage.
type ImageOptions struct {
	// Binary is the path of a statically linked mythex binary for the
	// engine's platform (CGO_ENABLED=0 go build ./cmd/mythex). Required.
	Binary string
	// Tags are the image's references, e.g. mythex/app:v1 (at least one).
	Tags []string
	// Labels are put on the image.
	Labels map[string]string
	// Progress receives the engine's build output ("Step 1/6 : FROM
	// scratch"); nil discards it.
	Progress io.Writer
}

// BuildImage builds the sample app image on the engine and returns its ID
// ("sha256:…"). The image is FROM scratch — no base image is pulled, no
// registry is needed — and holds only the static mythex binary as /mythex:
//
//	FROM scratch
//	COPY mythex /mythex
//	ENV MYTHEX_APP_LISTEN=0.0.0.0:8081
//	EXPOSE 8081
//	HEALTHCHECK --interval=5s --timeout=2s --start-period=10s --retries=3 \
//	  CMD ["/mythex", "sample-app", "check", "http://127.0.0.1:8081/healthz"]
//	ENTRYPOINT ["/mythex", "sample-app"]
//
// The build context (that Dockerfile and the binary) is a tar stream made
// here and sent with the Engine API's image build (the classic builder, which
// every engine has). The healthcheck is exec form: a scratch image has no
// shell.
//
// Errors: no binary or no tag; ErrNotStatic for a dynamically linked binary;
// the engine's build errors wrapped.
func BuildImage(ctx context.Context, cli client.APIClient, opts ImageOptions) (string, error) {
	if len(opts.Tags) == 0 {
		return "", errors.New("docker: build image: at least one tag is required, e.g. mythex/app:v1")
	}
	if err := CheckStatic(opts.Binary); err != nil {
		return "", fmt.Errorf("docker: build image: %w", err)
	}
	err := buildOnce(ctx, cli, opts)
	if err != nil && isVanishedImage(err) {
		// The classic builder reuses cached intermediate images; one that
		// is removed mid-build (another build's cleanup, docker image
		// prune) fails this build with "No such image". A second build
		// makes it again.
		err = buildOnce(ctx, cli, opts)
	}
	if err != nil {
		return "", fmt.Errorf("docker: build image: %w", err)
	}
	img, err := cli.ImageInspect(ctx, opts.Tags[0])
	if err != nil {
		return "", fmt.Errorf("docker: build image: inspect %s: %w", opts.Tags[0], err)
	}
	return img.ID, nil
}

// buildOnce sends one image build of opts to the engine and waits for its end.
func buildOnce(ctx context.Context, cli client.APIClient, opts ImageOptions) error {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeBuildContext(pw, SampleAppDockerfile(), opts.Binary))
	}()
	resp, err := cli.ImageBuild(ctx, pr, build.ImageBuildOptions{
		Tags:        opts.Tags,
		Labels:      opts.Labels,
		Dockerfile:  "Dockerfile",
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	if err != nil {
		pr.CloseWithError(err)
		return err
	}
	defer resp.Body.Close()
	out := opts.Progress
	if out == nil {
		out = io.Discard
	}
	if err := jsonmessage.DisplayJSONMessagesStream(resp.Body, out, 0, false, nil); err != nil {
		pr.CloseWithError(err)
		return err
	}
	return nil
}

// isVanishedImage reports whether a build failed because an image it used
// (a cached intermediate) was removed meanwhile. The engine says so in two
// ways, depending on when the removal lands: "No such image: sha256:…", or,
// when the image's config went between the cache lookup and the read,
// "failed to get digest sha256:…: open …/imagedb/content/sha256/…: no such
// file or directory" (Docker's image store).
func isVanishedImage(err error) bool {
	msg := err.Error()
	return cerrdefs.IsNotFound(err) || strings.Contains(msg, "No such image") ||
		(strings.Contains(msg, "failed to get digest") && strings.Contains(msg, "no such file or directory"))
}

// SampleAppDockerfile is the Dockerfile BuildImage builds (see there).
func SampleAppDockerfile() []byte {
	port := strconv.Itoa(SampleAppPort)
	return []byte(`FROM scratch
COPY mythex /mythex
ENV MYTHEX_APP_LISTEN=0.0.0.0:` + port + `
EXPOSE ` + port + `
HEALTHCHECK --interval=5s --timeout=2s --start-period=10s --retries=3 CMD ["/mythex", "sample-app", "check", "http://127.0.0.1:` + port + `/healthz"]
ENTRYPOINT ["/mythex", "sample-app"]
`)
}

// CheckStatic returns nil when path is a statically linked ELF executable,
// ErrNotStatic (wrapped, saying how to build one) when it needs a dynamic
// loader or shared libraries, and another error when it is not an ELF file.
func CheckStatic(path string) error {
	if path == "" {
		return errors.New("no binary given")
	}
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("binary %s: %w", path, err)
	}
	defer f.Close()
	libs, _ := f.ImportedLibraries()
	interp := false
	for _, p := range f.Progs {
		interp = interp || p.Type == elf.PT_INTERP
	}
	if interp || len(libs) > 0 {
		return fmt.Errorf("%s: %w (needs a dynamic loader and %v); build it with CGO_ENABLED=0 go build -o mythex ./cmd/mythex", path, ErrNotStatic, libs)
	}
	return nil
}

// writeBuildContext writes the build context as a tar stream: the
// Dockerfile and the binary as "mythex" (mode 0755), with fixed times so
// equal inputs make equal contexts.
func writeBuildContext(w io.Writer, dockerfile []byte, binary string) error {
	f, err := os.Open(binary)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	epoch := time.Unix(0, 0)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(dockerfile); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "mythex", Mode: 0o755, Size: fi.Size(), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return err
	}
	return tw.Close()
}

package docker

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/mythex/mythex/internal/testbin"
)

// buildEngine answers image builds with the given JSON message streams, one
// per call (the last repeats), and inspects every image as "sha256:built".
type buildEngine struct {
	client.APIClient
	streams []string
	calls   atomic.Int32
}

func (e *buildEngine) ImageBuild(_ context.Context, buildContext io.Reader, _ build.ImageBuildOptions) (build.ImageBuildResponse, error) {
	_, _ = io.Copy(io.Discard, buildContext) // as the engine reads the whole context
	n := int(e.calls.Add(1)) - 1
	return build.ImageBuildResponse{Body: io.NopCloser(strings.NewReader(e.streams[min(n, len(e.streams)-1)]))}, nil
}

func (e *buildEngine) ImageInspect(context.Context, string, ...client.ImageInspectOption) (image.InspectResponse, error) {
	return image.InspectResponse{ID: "sha256:built"}, nil
}

// TestBuildImage_RetriesAVanishedIntermediate: a cached intermediate image
// removed mid-build (another test's cleanup pruned it, seen in a full run)
// failed the build with "No such image", or, when its config went between
// the cache lookup and the read (seen in a full run), "failed to get
// digest"; one more build makes it again.
// Other build errors are not retried.
func TestBuildImage_RetriesAVanishedIntermediate(t *testing.T) {
	t.Parallel() // a fake engine
	bin, err := testbin.Build(testbin.App)
	if err != nil {
		t.Fatal(err)
	}
	const (
		vanished = `{"errorDetail":{"message":"No such image: sha256:92ede34cd829"},"error":"No such image: sha256:92ede34cd829"}` + "\n"
		noDigest = `{"errorDetail":{"message":"failed to get digest sha256:b8cf270c75e7: open /var/lib/docker/image/overlay2/imagedb/content/sha256/b8cf270c75e7: no such file or directory"},"error":"failed to get digest sha256:b8cf270c75e7: open /var/lib/docker/image/overlay2/imagedb/content/sha256/b8cf270c75e7: no such file or directory"}` + "\n"
		noFile   = `{"errorDetail":{"message":"COPY failed: open /src/mythex: no such file or directory"},"error":"COPY failed: open /src/mythex: no such file or directory"}` + "\n"
		broken   = `{"errorDetail":{"message":"COPY failed: no space left on device"},"error":"COPY failed: no space left on device"}` + "\n"
		built    = `{"stream":"Successfully built 92ede34cd829\n"}` + "\n"
	)
	tests := []struct {
		name      string
		streams   []string
		wantErr   string
		wantCalls int32
	}{
		{"built at once", []string{built}, "", 1},
		{"an intermediate vanished, built again", []string{vanished, built}, "", 2},
		{"an intermediate's config vanished, built again", []string{noDigest, built}, "", 2},
		{"vanished twice: the error", []string{vanished, vanished}, "No such image", 2},
		{"a missing file of the build is not retried", []string{noFile, built}, "no such file", 1},
		{"another error is not retried", []string{broken, built}, "no space left", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := &buildEngine{streams: tt.streams}
			id, err := BuildImage(t.Context(), eng, ImageOptions{Binary: bin, Tags: []string{"mythex-test/app:v1"}})
			switch {
			case tt.wantErr == "" && (err != nil || id != "sha256:built"):
				t.Errorf("BuildImage = %q, %v; want sha256:built", id, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("BuildImage error = %v; want one saying %q", err, tt.wantErr)
			}
			if got := eng.calls.Load(); got != tt.wantCalls {
				t.Errorf("builds sent = %d, want %d", got, tt.wantCalls)
			}
		})
	}
}

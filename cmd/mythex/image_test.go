package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/image"

	"github.com/mythex/mythex/internal/runtime/docker/dockertest"
	"github.com/mythex/mythex/internal/testbin"
)

func TestImageBuildCmd_BadInputExits2(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"dynamically linked binary", []string{"image", "build", "--binary", "/bin/ls"}, "CGO_ENABLED=0"},
		{"not a binary", []string{"image", "build", "--binary", "/etc/hostname"}, "--binary"},
		{"bad tag", []string{"image", "build", "--tag", "a b"}, "not an image reference"},
		// Any static binary passes --binary's check; the sample app's links in
		// a second where mythex's takes half a minute of this sequential test.
		{"no engine", []string{"image", "build", "--binary", staticApp(t), "--docker-host", "unix:///nonexistent/docker.sock"}, "no Docker engine reachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stderr := captureStderr(t, func() {
				if code := run(tt.args); code != exitBadUse {
					t.Errorf("exit code %d, want %d", code, exitBadUse)
				}
			})
			if !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("stderr %q does not say %q", stderr, tt.wantErr)
			}
		})
	}
}

func TestAgentCmd_DockerWithoutEngineExits2(t *testing.T) {
	t.Setenv(agentTokenEnv, "tok-0123456789abcdef")
	stderr := captureStderr(t, func() {
		code := run([]string{"agent", "--state-dir", t.TempDir(), "--host", "web-1", "--runtime", "docker", "--docker-host", "unix:///nonexistent/docker.sock"})
		if code != exitBadUse {
			t.Errorf("exit code %d, want %d", code, exitBadUse)
		}
	})
	if !strings.Contains(stderr, "--runtime docker") || !strings.Contains(stderr, "unix:///nonexistent/docker.sock") {
		t.Errorf("stderr %q does not name the runtime and the address", stderr)
	}
}

func TestImageBuildCmd_JSON(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image on the engine")
	}
	t.Parallel() // its own tag and buffers; no global output
	ctx := context.Background()
	cli := dockertest.Engine(t)
	tag := "mythex-cmdtest/app:" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-")
	t.Cleanup(func() {
		_, _ = cli.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true, PruneChildren: true})
	})
	var out, errOut bytes.Buffer
	f := imageBuildFlags{tags: []string{tag}, binary: staticApp(t), asJSON: true}
	if err := runImageBuild(ctx, f, &out, &errOut); err != nil {
		t.Fatalf("image build: %v\n%s", err, errOut.String())
	}
	var res imageBuildResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("stdout %q is not the JSON result: %v", out.String(), err)
	}
	img, err := cli.ImageInspect(ctx, tag)
	if err != nil || img.ID != res.ID || len(res.Tags) != 1 || res.Tags[0] != tag {
		t.Errorf("result %+v, image %s (%v)", res, img.ID, err)
	}
	if !strings.Contains(errOut.String(), "Step 1/6 : FROM scratch") {
		t.Errorf("build progress not on stderr: %q", errOut.String())
	}
}

// staticApp returns the sample app built statically (testbin.Build): the
// binary these tests put in an image; they build images, they run none.
func staticApp(t *testing.T) string { return buildBin(t, testbin.App) }

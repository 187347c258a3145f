package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/runtime/docker"
)

// imageBuildFlags are the flags of `mythex image build`.
type imageBuildFlags struct {
	tags       []string
	binary     string
	dockerHost string
	asJSON     bool
}

func newImageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Container images for the Docker runtime",
		Example: `  # the image examples/docker's compose.yaml runs, tagged for two versions
  mythex image build --tag mythex/app:v1 --tag mythex/app:v2`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newImageBuildCmd())
	return cmd
}

func newImageBuildCmd() *cobra.Command {
	var f imageBuildFlags
	cmd := &cobra.Command{
		Use:   "build [--tag REF]... [--binary PATH]",
		Short: "Build the sample app image (FROM scratch, the mythex binary only) on the Docker engine",
		Long: `image build builds the sample app's container image on the Docker engine,
through the Engine API: FROM scratch, holding only the mythex binary as
/mythex, with ENTRYPOINT ["/mythex", "sample-app"], listening on 0.0.0.0:` + fmt.Sprint(docker.SampleAppPort) + `
and an exec-form HEALTHCHECK (a scratch image has no shell, no curl):

` + indent(string(docker.SampleAppDockerfile()), "  ") + `
No base image is pulled and no registry is needed. The binary must be
statically linked; by default it is this mythex binary, and when that one was
built with cgo on (as ` + "`go run`" + ` makes it on most machines) a static one is built
from the module's source first (CGO_ENABLED=0, needs Go and the source).

Tag it once per version the compose file names (image: mythex/app:${MYTHEX_VERSION}):
one image can carry every tag, the version reaches the app through
MYTHEX_APP_VERSION.

Exit status: 0 built; 1 the build failed; 2 bad input (a dynamically linked
binary, no engine reachable).`,
		Example: `  go run ./cmd/mythex image build --tag mythex/app:v1 --tag mythex/app:v2
  ./mythex image build --tag mythex/app:v3 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runImageBuild(cmd.Context(), f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.tags, "tag", "t", []string{"mythex/app:latest"}, "image reference to tag the image with (repeatable)")
	fl.StringVar(&f.binary, "binary", "", "statically linked mythex binary to put in the image (default: this binary)")
	fl.StringVar(&f.dockerHost, "docker-host", "", "Docker engine address (default $DOCKER_HOST, else unix:///var/run/docker.sock)")
	fl.BoolVar(&f.asJSON, "json", false, `print {"id": …, "tags": […]} instead of text; build output still goes to stderr`)
	return cmd
}

// imageBuildResult is what --json prints.
type imageBuildResult struct {
	// ID is the image ID, "sha256:…".
	ID string `json:"id"`
	// Tags are the references the image was tagged with.
	Tags []string `json:"tags"`
}

func runImageBuild(ctx context.Context, f imageBuildFlags, out, errOut io.Writer) error {
	for _, t := range f.tags {
		if t == "" || strings.ContainsAny(t, " \t\n") {
			return usagef("--tag %q is not an image reference; use a name like mythex/app:v1", t)
		}
	}
	tmp, err := os.MkdirTemp("", "mythex-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := docker.ImageBinary(ctx, f.binary, tmp, errOut)
	if err != nil {
		return usagef("--binary: %v (--binary PATH)", err)
	}
	cli, err := docker.Connect(ctx, f.dockerHost)
	if err != nil {
		return usagef("%v (is the Docker daemon running? see --docker-host)", err)
	}
	defer cli.Close()
	id, err := docker.BuildImage(ctx, cli, docker.ImageOptions{Binary: bin, Tags: f.tags, Progress: errOut})
	if err != nil {
		return withCode(exitFailed, err)
	}
	if f.asJSON {
		b, _ := json.Marshal(imageBuildResult{ID: id, Tags: f.tags})
		fmt.Fprintf(out, "%s\n", b)
		return nil
	}
	fmt.Fprintf(out, "built %s as %s\n", id, strings.Join(f.tags, ", "))
	return nil
}

// indent prefixes every non-empty line of s.
func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

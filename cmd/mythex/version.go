package main

import (
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what `mythex version --json` prints.
type versionInfo struct {
	// Version is the module version, "devel" for a build from a work tree.
	Version string `json:"version"`
	// Revision is the VCS revision (12 hex digits); empty when unknown.
	Revision string `json:"revision,omitempty"`
	// Modified is true when the work tree had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// Go is the Go toolchain that built the binary.
	Go string `json:"go"`
	// CGO is whether the binary was built with cgo on (then it is dynamically
	// linked and `image build` makes a static one for images).
	CGO bool `json:"cgo"`
}

// newVersionCmd prints mythex's version from the build information Go
// records in every binary (module version, VCS revision).
func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print mythex's version and the Go toolchain it was built with",
		Example: `  go run ./cmd/mythex version
  go run ./cmd/mythex version --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			vi := readVersion()
			if asJSON {
				b, err := json.Marshal(vi)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout(), vi.String())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: version, revision, modified, go, cgo")
	return cmd
}

// readVersion reads the build information Go records in the binary.
func readVersion() versionInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return versionInfo{Version: "unknown"}
	}
	vi := versionInfo{Version: bi.Main.Version, Go: bi.GoVersion}
	if vi.Version == "" || vi.Version == "(devel)" {
		vi.Version = "devel"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			vi.Revision = s.Value
			if len(vi.Revision) > 12 {
				vi.Revision = vi.Revision[:12]
			}
		case "vcs.modified":
			vi.Modified = s.Value == "true"
		case "CGO_ENABLED":
			vi.CGO = s.Value == "1"
		}
	}
	return vi
}

// String is "mythex <version> (<revision>[, modified]) <go version>".
func (vi versionInfo) String() string {
	if vi.Revision != "" {
		dirty := ""
		if vi.Modified {
			dirty = ", modified"
		}
		return fmt.Sprintf("mythex %s (%s%s) %s", vi.Version, vi.Revision, dirty, vi.Go)
	}
	return fmt.Sprintf("mythex %s %s", vi.Version, vi.Go)
}

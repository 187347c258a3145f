// Package buildinfo reads the version Go records in every binary (module
// version, VCS revision, toolchain): what `mythex version` prints.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Info is the binary's version, as `mythex version --json` prints it.
type Info struct {
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

// Read reads the build information Go records in the binary.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown"}
	}
	vi := Info{Version: bi.Main.Version, Go: bi.GoVersion}
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
func (vi Info) String() string {
	if vi.Revision != "" {
		dirty := ""
		if vi.Modified {
			dirty = ", modified"
		}
		return fmt.Sprintf("mythex %s (%s%s) %s", vi.Version, vi.Revision, dirty, vi.Go)
	}
	return fmt.Sprintf("mythex %s %s", vi.Version, vi.Go)
}

package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// newVersionCmd prints mythex's version from the build information Go
// records in every binary (module version, VCS revision).
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print mythex's version and the Go toolchain it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return nil
		},
	}
}

// versionString is "mythex <version> (<revision>[, modified]) <go version>".
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "mythex (unknown version)"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
			if len(rev) > 12 {
				rev = rev[:12]
			}
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	if rev != "" {
		return fmt.Sprintf("mythex %s (%s%s) %s", v, rev, dirty, bi.GoVersion)
	}
	return fmt.Sprintf("mythex %s %s", v, bi.GoVersion)
}

package main

import (
	"encoding/json"
	"fmt"

	"github.com/mythex/mythex/internal/buildinfo"

	"github.com/spf13/cobra"
)

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
			vi := buildinfo.Read()
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

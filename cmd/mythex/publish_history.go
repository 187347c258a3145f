package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/publish"
	"github.com/mythex/mythex/internal/termui"
)

func newPublishHistoryCmd() *cobra.Command {
	var (
		target publishTarget
		app    string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "history [--app NAME] [--json]",
		Short: "List the releases of an app (or of every app), newest first",
		Long: `history lists releases as the release store keeps them: id, status (pending,
live, failed, rolled_back, interrupted), when it was published, its image, the last known
good release it would roll back to, and why it failed or was rolled back. The
release serving now is marked with *. Releases are never deleted: any of them
can be restored from its record.`,
		Example: `  mythex publish history --app api
  mythex publish history --json | jq '.[] | select(.status == "rolled_back") | .reason'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if app != "" {
				if err := checkAppFlag(app); err != nil {
					return err
				}
			}
			// A read: no store yet means no releases, and nothing is created.
			db := filepath.Join(target.stateDir, publish.DBFile)
			_, err := os.Stat(db)
			if errors.Is(err, syscall.ENOTDIR) {
				return usagef("--state-dir %s is a file: give the directory mythex publish keeps its release store in", target.stateDir)
			}
			if errors.Is(err, fs.ErrNotExist) {
				if asJSON {
					return termui.WriteReleasesJSON(cmd.OutOrStdout(), nil, nil)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "no releases (no release store at %s yet; mythex publish creates it)\n", db)
				return nil
			}
			store, err := target.openStore()
			if err != nil {
				return err
			}
			defer store.Close()
			rels, err := store.List(cmd.Context(), app)
			if err != nil {
				return err
			}
			current := map[string]string{}
			for _, r := range rels {
				if _, seen := current[r.App]; !seen {
					cur, ok, err := store.Current(cmd.Context(), r.App)
					if err != nil {
						return err
					}
					current[r.App] = ""
					if ok {
						current[r.App] = cur.ID
					}
				}
			}
			if asJSON {
				return termui.WriteReleasesJSON(cmd.OutOrStdout(), rels, current)
			}
			if len(rels) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no releases")
				return nil
			}
			termui.WriteReleasesText(cmd.OutOrStdout(), rels, current)
			return nil
		},
	}
	cmd.Flags().StringVar(&app, "app", "", "only this app's releases")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the releases as JSON")
	target.addFlags(cmd.Flags(), false)
	return cmd
}

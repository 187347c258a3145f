package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/publish"
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
					return writeHistoryJSON(cmd.OutOrStdout(), nil, nil)
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
				return writeHistoryJSON(cmd.OutOrStdout(), rels, current)
			}
			if len(rels) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no releases")
				return nil
			}
			writeHistoryText(cmd.OutOrStdout(), rels, current)
			return nil
		},
	}
	cmd.Flags().StringVar(&app, "app", "", "only this app's releases")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the releases as JSON")
	target.addFlags(cmd.Flags(), false)
	return cmd
}

type historyJSON struct {
	App          string   `json:"app"`
	Release      string   `json:"release"`
	Current      bool     `json:"current"`
	Status       string   `json:"status"`
	Image        string   `json:"image"`
	Platform     string   `json:"platform"`
	Strategy     string   `json:"strategy"`
	CreatedAt    string   `json:"created_at"`
	LiveAt       string   `json:"live_at,omitempty"`
	LastGood     string   `json:"last_good,omitempty"`
	RolledBackTo string   `json:"rolled_back_to,omitempty"`
	Reason       string   `json:"reason,omitempty"`
	Machines     []string `json:"machines"`
}

func writeHistoryJSON(w io.Writer, rels []publish.Release, current map[string]string) error {
	out := []historyJSON{}
	for _, r := range rels {
		h := historyJSON{App: r.App, Release: r.ID, Current: current[r.App] == r.ID, Status: string(r.Status), Image: r.Config.Image,
			Platform: r.Platform, Strategy: string(r.Strategy), CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339), LastGood: r.LastGood,
			RolledBackTo: r.RolledBackTo, Reason: r.Reason, Machines: nonNil(r.Machines)}
		if !r.LiveAt.IsZero() {
			h.LiveAt = r.LiveAt.UTC().Format(time.RFC3339)
		}
		out = append(out, h)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeHistoryText(w io.Writer, rels []publish.Release, current map[string]string) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tRELEASE\tSTATUS\tPUBLISHED\tIMAGE\tLAST GOOD\tREASON")
	for _, r := range rels {
		mark := " "
		if current[r.App] == r.ID {
			mark = "*"
		}
		status := string(r.Status)
		if r.RolledBackTo != "" {
			status += " → " + r.RolledBackTo
		}
		reason := r.Reason
		if len(reason) > 120 {
			reason = reason[:117] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%s\t%s\t%s\n", r.App, mark, r.ID, status, r.CreatedAt.Local().Format("2006-01-02 15:04:05"),
			r.Config.Image, dash(r.LastGood), strings.ReplaceAll(reason, "\n", " "))
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

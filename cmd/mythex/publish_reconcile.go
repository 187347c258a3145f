package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/publish"
)

func newPublishReconcileCmd() *cobra.Command {
	var (
		target publishTarget
		tf     timingFlags
		every  time.Duration
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "reconcile [--every 30s] [platform flags]",
		Short: "Re-check live releases; roll a late failure back to the last good release",
		Long: `reconcile looks again at the release serving each app on the platform: crashes
since it went live are compared, by latest crash timestamp, with what the
previous round saw, so even a slow crash loop (one crash per round) is caught.
A late failure rolls back to the last known good release instead of leaving the
app down — the write-up's reconciler failed the deployment and the whole site
served 404 — and the reason is recorded on the release (see ` + "`publish history`" + `).
A release left pending by an unknown verdict is judged again and promoted or
rolled back. Apps locked by a running publish are skipped.

Without --every, one round runs. Exit status: 0 when every release checked
still holds, 1 when one failed (and was rolled back), 3 when one could not be
checked. With --every, rounds run until interrupted.`,
		Example: `  mythex publish reconcile

  # on Fly (needs a Machines API token: without one it stops at once, exit 2)
  FLY_API_TOKEN=... mythex publish reconcile --every 30s --platform fly`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if every < 0 {
				return usagef("--every %s: give a positive interval such as 30s", every)
			}
			opts, err := tf.options()
			if err != nil {
				return err
			}
			g, _, closeAll, err := target.gate(opts, progressWriter(cmd.ErrOrStderr(), false))
			if err != nil {
				return err
			}
			defer closeAll()
			r := publish.NewReconciler(g)
			out := cmd.OutOrStdout()
			report := func(checks []publish.Check, err error) {
				if err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), "mythex: reconcile:", err)
				}
				if asJSON {
					_ = writeChecksJSON(out, checks)
				} else {
					writeChecksText(out, checks)
				}
			}
			if every > 0 {
				err := r.Run(cmd.Context(), every, report)
				if cmd.Context().Err() != nil {
					return nil
				}
				return err
			}
			checks, err := r.RunOnce(cmd.Context())
			report(checks, nil)
			if err != nil {
				return err
			}
			code := exitOK
			for _, c := range checks {
				switch {
				case c.Action == publish.ActionRolledBack || c.Action == publish.ActionFailed:
					code = exitFailed
				case code == exitOK && c.Verdict != nil && c.Verdict.Status == publish.StatusUnknown:
					code = exitUnknown
				}
			}
			if code != exitOK {
				return silentExit(code)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.DurationVar(&every, "every", 0, "run a round every interval until interrupted (0: one round)")
	fs.BoolVar(&asJSON, "json", false, "print each round's checks as JSON")
	target.addFlags(fs, true)
	tf.addFlags(fs)
	return cmd
}

func writeChecksText(w io.Writer, checks []publish.Check) {
	if len(checks) == 0 {
		fmt.Fprintln(w, "no releases to check")
	}
	for _, c := range checks {
		line := fmt.Sprintf("%s %s: %s", c.App, dash(c.Release), c.Action)
		if c.Verdict != nil {
			line += fmt.Sprintf(" (verdict %s)", c.Verdict.Status)
		}
		if c.Rollback != nil && c.Rollback.To != "" {
			line += fmt.Sprintf(", restored %s in %s", c.Rollback.To, c.Rollback.Took.Round(time.Millisecond))
		}
		fmt.Fprintln(w, line)
		if c.Verdict != nil {
			for _, r := range c.Verdict.Reasons {
				fmt.Fprintf(w, "  %s\n", r)
			}
			for _, r := range c.Verdict.Warnings {
				fmt.Fprintf(w, "  warning: %s\n", r)
			}
		}
		if c.Note != "" {
			fmt.Fprintf(w, "  %s\n", strings.TrimSpace(c.Note))
		}
	}
}

func writeChecksJSON(w io.Writer, checks []publish.Check) error {
	if checks == nil {
		checks = []publish.Check{}
	}
	enc := json.NewEncoder(w)
	return enc.Encode(checks)
}

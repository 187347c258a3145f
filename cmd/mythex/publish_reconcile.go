package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/publish"
	"github.com/mythex/mythex/internal/termui"
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
			g, _, closeAll, err := target.gate(opts, termui.PublishProgress(cmd.ErrOrStderr(), false))
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
					_ = termui.WriteReconcileJSON(out, checks)
				} else {
					termui.WriteReconcileText(out, checks)
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

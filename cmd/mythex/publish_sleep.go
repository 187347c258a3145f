package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/platform"
)

func newPublishSleepCmd() *cobra.Command {
	var (
		target publishTarget
		app    string
		wake   bool
	)
	cmd := &cobra.Command{
		Use:   "sleep --app NAME [--wake]",
		Short: "Put an app's started machines to sleep (suspend), or wake them",
		Long: `sleep suspends every started machine of an app, as a platform's auto-stop does
to an idle app; --wake starts them again. Each sleep and wake adds events to
the machines' bounded event lists — the write-up's reproduction: a working
app, let it sleep, then republish a version that crashes at startup.`,
		Example: `  mythex publish sleep --app api
  mythex publish sleep --app api --wake`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if app == "" {
				return usagef("sleep needs --app NAME")
			}
			p, closeP, err := target.openPlatform()
			if err != nil {
				return err
			}
			defer closeP()
			n, err := platform.Sleep(cmd.Context(), p, app, wake)
			if errors.Is(err, platform.ErrCannotSleep) {
				return usagef("--platform %s cannot put machines to sleep", target.platform)
			} else if err != nil {
				return publishErr(err)
			}
			verb := "put to sleep"
			if wake {
				verb = "woken"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d machine(s) of %s %s\n", n, app, verb)
			return nil
		},
	}
	cmd.Flags().StringVar(&app, "app", "", "app whose machines to put to sleep (required)")
	cmd.Flags().BoolVar(&wake, "wake", false, "wake the sleeping machines instead")
	target.addFlags(cmd.Flags(), true)
	return cmd
}

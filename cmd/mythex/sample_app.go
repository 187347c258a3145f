package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/examples/app/sampleapp"
)

// newSampleAppCmd runs the sample app (examples/app) from inside the mythex
// binary, so the demo, the local examples and FROM scratch images need no
// second program. Its flags are the sample app's own.
func newSampleAppCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sample-app [flags] | sample-app check URL",
		Short: "Run mythex's sample HTTP service (see examples/app/README.md)",
		Long: `Run mythex's sample HTTP service: it answers with its service, version and
host, drains on SIGTERM (health 503, keeps serving, then shuts down), and can
be told to boot slowly, crash, ignore SIGTERM or stay unhealthy. Every flag
also reads MYTHEX_APP_<FLAG>. "sample-app -h" lists them.`,
		Example: `  mythex sample-app --listen 127.0.0.1:9101 --version v1 --service gateway
  MYTHEX_APP_CRASH_ON_START=500ms mythex sample-app
  mythex sample-app check http://127.0.0.1:9101/healthz`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			// The app handles its own signals (drain); mythex's root context,
			// cancelled on SIGTERM too, must not start the drain a second way.
			if code := sampleapp.RunAs(context.WithoutCancel(cmd.Context()), "mythex sample-app", args, os.Getenv, os.Stderr); code != 0 {
				return silentExit(code)
			}
			return nil
		},
	}
}

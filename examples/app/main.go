// Command app is mythex's sample HTTP service: it reports who answered
// (service, version, host), drains on SIGTERM with package drain, and can be
// told to boot slowly, crash, ignore SIGTERM or stay unhealthy, so that load
// balancer, deploy and publish tests have something real to run. See
// README.md; `app -h` lists the flags and their MYTHEX_APP_* variables. The
// same program is built into mythex as `mythex sample-app`; its code is in
// package sampleapp.
package main

import (
	"context"
	"os"

	"github.com/mythex/mythex/examples/app/sampleapp"
)

func main() {
	os.Exit(sampleapp.Run(context.Background(), os.Args[1:], os.Getenv, os.Stderr))
}

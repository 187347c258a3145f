// Command app is mythex's sample HTTP service: it reports who answered
// (service, version, host), drains on SIGTERM with package drain, and can be
// told to boot slowly, crash, ignore SIGTERM or stay unhealthy, so that load
// balancer, deploy and publish tests have something real to run. See
// README.md; `app -h` lists the flags and their MYTHEX_APP_* variables.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stderr))
}

package hooks

import (
	"context"
	"fmt"
	"io"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/fleet"
)

// Deploy runs deploy.hooks (mythex.yml) around one deploy.
type Deploy struct {
	h       fleet.Hooks
	version string
	hosts   []string
	errOut  io.Writer
}

// ForDeploy returns the hooks of one deploy of version to cfg's hosts
// (deploy.hooks of mythex.yml); failing hooks that do not stop the deploy are
// reported on errOut.
func ForDeploy(cfg *fleet.Loaded, version string, errOut io.Writer) *Deploy {
	return &Deploy{h: cfg.Deploy.Hooks, version: version, hosts: cfg.HostNames(), errOut: errOut}
}

// Pre runs pre_deploy; its failure stops the deploy before anything changes.
func (d *Deploy) Pre(ctx context.Context) error {
	if err := d.run(ctx, "pre_deploy", d.h.PreDeploy, "pending"); err != nil {
		return fmt.Errorf("%w; nothing was changed", err)
	}
	return nil
}

// After runs post_deploy, on_rollback or on_failure for the deploy's outcome.
// A failing hook is reported, and does not change the deploy's result.
func (d *Deploy) After(ctx context.Context, res deploy.Result, err error) {
	rolledBack := false
	for _, h := range res.Hosts {
		rolledBack = rolledBack || h.RolledBack
	}
	var hookErr error
	switch {
	case err == nil:
		hookErr = d.run(ctx, "post_deploy", d.h.PostDeploy, "ok")
	case rolledBack:
		hookErr = d.run(ctx, "on_rollback", d.h.OnRollback, "rolled_back")
		if e := d.run(ctx, "on_failure", d.h.OnFailure, "rolled_back"); hookErr == nil {
			hookErr = e
		}
	default:
		hookErr = d.run(ctx, "on_failure", d.h.OnFailure, "failed")
	}
	if hookErr != nil {
		fmt.Fprintf(d.errOut, "warning: %v\n", hookErr)
	}
}

// AfterRollback runs on_rollback after `mythex rollback` (MYTHEX_RESULT ok
// or failed), and on_failure too when it failed. A failing hook is
// reported, and does not change the rollback's result.
func (d *Deploy) AfterRollback(ctx context.Context, err error) {
	result := "ok"
	if err != nil {
		result = "failed"
	}
	hookErr := d.run(ctx, "on_rollback", d.h.OnRollback, result)
	if err != nil {
		if e := d.run(ctx, "on_failure", d.h.OnFailure, result); hookErr == nil {
			hookErr = e
		}
	}
	if hookErr != nil {
		fmt.Fprintf(d.errOut, "warning: %v\n", hookErr)
	}
}

func (d *Deploy) run(ctx context.Context, name string, argv []string, result string) error {
	if len(argv) == 0 {
		return nil
	}
	// A deploy interrupted by Ctrl-C still tells its hooks.
	return Run(context.WithoutCancel(ctx), argv, Event{Hook: name, Version: d.version, Result: result, Hosts: d.hosts}, d.h.Timeout, nil)
}

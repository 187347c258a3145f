package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mythex/mythex/internal/hooks"
	"github.com/mythex/mythex/internal/termui"
	"github.com/spf13/cobra"
)

func newRollbackCmd() *cobra.Command {
	f := deployFlags{rollback: true}
	cmd := &cobra.Command{
		Use:   "rollback -f mythex.yml [--to VERSION]",
		Short: "Roll the whole fleet back to its last good version (or one every host still keeps)",
		Long: `rollback returns every host of mythex.yml to a version it ran before, through
the same rolling deploy as mythex deploy: the host lease, the drain handshake
with the load balancer, the capacity check before each batch, looking twice at
every service, the sweep, and the version recorded as last known good. Each
host publishes again its own stored definition of that version, byte for byte
as it was first deployed; nothing is rebuilt.

Each agent keeps three definitions: current, previous and last known good.
Without --to the fleet goes back to its last good version — the one the last
deploy that verified the whole fleet recorded — when some host runs anything
else (a deploy that stopped halfway); when every host already runs it, to the
version before it. --to VERSION names the version; every host must still keep
it, or nothing is done and the hosts that do not are named.

A rollback is recorded in each host's history (mythex history, kind
rollback). deploy.hooks.on_rollback runs after it with MYTHEX_RESULT ok or
failed, and on_failure too when it failed; pre_deploy does not run.

Tokens and transports are those of mythex deploy (hosts[].ssh, agent_tls,
--insecure-plaintext).

Exit status: 0 rolled back and verified; 1 a host failed (the message says
what was rolled back again); 2 bad input, a version some host no longer keeps,
no one last good version, an unreachable agent or load balancer, a refused
SSH host key, or another deploy in progress — nothing was changed.`,
		Example: `  mythex rollback -f examples/local/mythex.yml
  mythex rollback -f examples/local/mythex.yml --to v1
  mythex rollback -f examples/local/mythex.yml --to v1 --json > rollback-events.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadFleet(f.file)
			if err != nil {
				return err
			}
			// As deploy: Ctrl-C and SIGTERM stop it (what it changed is
			// rolled back again); a closed stdout only drops output.
			ctx, stop := signal.NotifyContext(context.WithoutCancel(cmd.Context()), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := runDeploy(ctx, cfg, f, &termui.DropWriter{W: os.Stdout}, os.Stderr)
			if len(res.Hosts) > 0 {
				hooks.ForDeploy(cfg, res.Version, os.Stderr).AfterRollback(ctx, err)
			}
			return deployExit(res, err)
		},
	}
	fl := cmd.Flags()
	f.addCommonFlags(fl)
	fl.StringVar(&f.version, "to", "", "the version to return to; every host must still keep it (default: the fleet's last good version)")
	fl.StringVar(&f.holder, "holder", "", "who rolls back, shown in leases and history (default: rollback to V by $USER)")
	return cmd
}

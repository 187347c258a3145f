package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/termui"
)

func newLeaseCmd() *cobra.Command {
	var conn agentConnFlags
	cmd := &cobra.Command{
		Use:   "lease status|break",
		Short: "Show or break the deploy leases of the fleet's hosts",
		Long: `A deploy holds a lease on each host it changes (and one fleet lease on the
first host, which keeps a second deploy out). The agent keeps a lease in its
state directory, so it survives an agent restart, and when a lease runs out
because its deploy died, the agent returns the host to its last known good
definition and registers it with the load balancer again.

lease status shows every lease: who holds it, how long it has left, when it
was last renewed, the step of the deploy in progress, what the host returns
to if it runs out, and whether the host is whole (restored).

lease break ends a host's lease now, as if it had expired: the agent's
recovery runs before the command returns. It refuses while the holder still
renews the lease (a live deploy renews every third of its TTL) unless
--force; break a live deploy's lease only once that deploy is stopped.`,
		Example: `  mythex lease status -f examples/local/mythex.yml
  mythex lease status -f examples/local/mythex.yml --host web-2 --json
  mythex lease break -f examples/local/mythex.yml --host web-2
  mythex lease break --agent 127.0.0.1:9202 --force --by alice`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLeaseStatus(cmd.Context(), conn, os.Stdout)
		},
	}
	conn.register(cmd)
	statusCmd := &cobra.Command{
		Use:   "status",
		Short: "Show the host and fleet leases and whether each host is restored",
		Long: `status asks one agent (--agent, or -f with --host) or, with -f alone, every
host of the fleet. Exit 1 when an agent cannot be reached.`,
		Example: `  mythex lease status -f examples/local/mythex.yml
  mythex lease status --agent 127.0.0.1:9201 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLeaseStatus(cmd.Context(), conn, os.Stdout)
		},
	}
	var br struct {
		fleet, force bool
		by           string
	}
	breakCmd := &cobra.Command{
		Use:   "break",
		Short: "End a host's lease now and let its agent recover the host",
		Long: `break ends the lease of one host (--agent, or -f with --host) as if it had
expired: the agent returns the host to its last known good definition and
registers it with the load balancer again, then answers. --fleet breaks the
fleet lease instead (no recovery: it only keeps other deploys out).

It refuses (exit 1) while the holder renewed the lease within the last half
of its TTL: a deploy that is alive. --force breaks it anyway. With no lease
held there is nothing to break: it says so and exits 1.`,
		Example: `  # a deployer killed mid-deploy on the local example fleet (exit 1 when no lease is held)
  mythex lease break -f examples/local/mythex.yml --host web-2
  mythex lease break --agent 127.0.0.1:9201 --fleet
  mythex lease break -f examples/local/mythex.yml --host web-2 --force --by alice --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if conn.agent == "" && (conn.file == "" || conn.host == "") {
				return usagef("lease break acts on one host: give --agent ADDR, or -f mythex.yml with --host NAME")
			}
			c, name, done, err := conn.client(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			by := br.by
			if by == "" {
				by = auth.WhoAmI()
			}
			st, err := c.Status(cmd.Context())
			if err != nil {
				return agentErr(err)
			}
			held := st.Lease
			kind := "host"
			if br.fleet {
				held, kind = st.FleetLease, "fleet"
			}
			if held == nil {
				return fmt.Errorf("%s: no %s lease is held; nothing to break", name, kind)
			}
			if !conn.asJSON {
				fmt.Fprintf(os.Stderr, "%s: breaking the %s lease of %q (step %s); the agent recovers the host before it answers…\n",
					name, kind, held.Holder, termui.LeaseStep(*held))
			}
			rep, err := c.BreakLease(cmd.Context(), br.fleet, br.force, by)
			if errors.Is(err, agentapi.ErrLeaseHeld) {
				return fmt.Errorf("%s: %w", name, err)
			}
			if err != nil {
				return agentErr(err)
			}
			if conn.asJSON {
				return termui.WriteJSON(os.Stdout, rep)
			}
			fmt.Printf("%s: %s lease of %q broken\n", name, kind, rep.Broken.Holder)
			if r := rep.Recovery; r != nil {
				fmt.Printf("%s: recovery %s%s\n", name, r.State, termui.RecoveryDetail(*r))
				if r.State != agentapi.RecoveryRestored {
					return fmt.Errorf("%s: the host is not restored: %s", name, r.Error)
				}
			}
			return nil
		},
	}
	breakCmd.Flags().BoolVar(&br.fleet, "fleet", false, "break the fleet lease instead of the host lease")
	breakCmd.Flags().BoolVar(&br.force, "force", false, "break a lease its holder still renews")
	breakCmd.Flags().StringVar(&br.by, "by", "", "who breaks it, for the agent's log (default $USER@hostname)")
	cmd.AddCommand(statusCmd, breakCmd)
	return cmd
}

func runLeaseStatus(ctx context.Context, conn agentConnFlags, out io.Writer) error {
	var rows []agentapi.HostLeases
	if conn.file != "" && conn.host == "" && conn.agent == "" {
		token, err := auth.LoadToken(conn.tokenFile, agentTokenEnv)
		if err != nil {
			return usagef("agent token: %v", err)
		}
		cfg, err := loadFleet(conn.file)
		if err != nil {
			return err
		}
		pool := agentconn.NewPool(agentconn.Options{InsecurePlaintext: conn.insecurePlaintext, Warn: os.Stderr, Timeout: 30 * time.Second})
		defer pool.Close()
		for _, h := range cfg.Hosts {
			c, err := pool.Connect(ctx, cfg, h, token)
			if err != nil {
				rows = append(rows, agentapi.HostLeases{Host: h.Name, Agent: h.Agent, Error: err.Error()})
				continue
			}
			rows = append(rows, agentapi.AskLeases(ctx, c, h.Name))
		}
	} else {
		c, name, done, err := conn.client(ctx)
		if err != nil {
			return err
		}
		defer done()
		rows = append(rows, agentapi.AskLeases(ctx, c, name))
	}
	var failed []string
	for _, r := range rows {
		if r.Error != "" {
			failed = append(failed, r.Host)
		}
	}
	if conn.asJSON {
		if err := termui.WriteJSON(out, rows); err != nil {
			return err
		}
	} else {
		termui.WriteLeases(out, rows, time.Now())
	}
	if len(failed) > 0 {
		return fmt.Errorf("could not ask the agents of %v", failed)
	}
	return nil
}

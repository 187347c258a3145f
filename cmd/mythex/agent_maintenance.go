package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/termui"
)

// agentConnFlags say which agent to talk to.
type agentConnFlags struct {
	agent     string
	file      string
	host      string
	tokenFile string
	asJSON    bool
	// insecurePlaintext allows plain HTTP to an agent beyond loopback.
	insecurePlaintext bool
}

func (c *agentConnFlags) register(cmd *cobra.Command) {
	fl := cmd.PersistentFlags()
	fl.StringVar(&c.agent, "agent", "", "the agent's API address (default hosts[].agent of --host with -f, else 127.0.0.1:9201)")
	fl.StringVarP(&c.file, "file", "f", "", "fleet config (mythex.yml): find the agent of --host")
	fl.StringVar(&c.host, "host", "", "the host whose agent to ask, with -f (default: the machine's host name)")
	fl.StringVar(&c.tokenFile, "token-file", "", "file holding the agent's bearer token (default $"+agentTokenEnv+")")
	fl.BoolVar(&c.asJSON, "json", false, "print the agent's answer as JSON")
	fl.BoolVar(&c.insecurePlaintext, "insecure-plaintext", false, "allow plain HTTP to an agent beyond loopback (with -f, hosts[].ssh and agent_tls are used when set)")
}

// again repeats the flags that named the agent, for a hint to run next.
func (c *agentConnFlags) again() string {
	var s string
	if c.file != "" {
		s += " -f " + c.file
	}
	if c.host != "" {
		s += " --host " + c.host
	}
	if c.agent != "" {
		s += " --agent " + c.agent
	}
	if c.tokenFile != "" {
		s += " --token-file " + c.tokenFile
	}
	return s
}

// client returns a client for the agent the flags name, reached as every
// command reaches agents (agentconn: the host's hosts[].ssh or agent_tls
// with -f, loopback, or --insecure-plaintext), and the function that closes
// its connection.
func (c *agentConnFlags) client(ctx context.Context) (*agentapi.Client, string, func(), error) {
	token, err := auth.LoadToken(c.tokenFile, agentTokenEnv)
	if err != nil {
		return nil, "", nil, usagef("agent token: %v", err)
	}
	cfg := &fleet.Loaded{}
	h := fleet.Host{Name: c.host, Agent: strings.TrimPrefix(c.agent, "http://")}
	if c.agent == "" && c.file != "" {
		if cfg, err = loadFleet(c.file); err != nil {
			return nil, "", nil, err
		}
		name := c.host
		if name == "" {
			name, _ = os.Hostname()
		}
		fh, ok := cfg.Host(name)
		if !ok {
			return nil, "", nil, usagef("--host %q is not in %s (hosts: %s)", name, c.file, strings.Join(cfg.HostNames(), ", "))
		}
		if fh.Agent == "" {
			return nil, "", nil, usagef("hosts[%s].agent is not set in %s; give --agent", name, c.file)
		}
		h = fh
	}
	if h.Agent == "" {
		h.Agent = "127.0.0.1:9201"
	}
	if h.Name == "" {
		h.Name = h.Agent
	}
	pool := agentconn.NewPool(agentconn.Options{InsecurePlaintext: c.insecurePlaintext, Warn: os.Stderr, Timeout: 30 * time.Second})
	cl, err := pool.Connect(ctx, cfg, h, token)
	if err != nil {
		pool.Close()
		return nil, "", nil, withCode(exitBadUse, err)
	}
	return cl, h.Name, func() { _ = pool.Close() }, nil
}

func newAgentMaintenanceCmd() *cobra.Command {
	var conn agentConnFlags
	cmd := &cobra.Command{
		Use:   "maintenance on|off|status",
		Short: "Pause the watchdog's healing on a host for a while, with a reason",
		Long: `maintenance pauses the watchdog of one host's agent: while it is on, the
watchdog still looks at every service and reports it in status, but counts no
strikes and heals nothing. It is for work that makes a service look dead on
purpose (a database optimisation, a manual restart, a backup). It needs a
duration and a reason, survives an agent restart, and ends by itself; the
strikes start from zero afterwards.

Without a subcommand it shows the maintenance window in force.`,
		Example: `  mythex agent maintenance on --for 30m --reason "db optimize"
  mythex agent maintenance -f examples/local/mythex.yml --host web-2 on --for 2h --reason "kernel update" --by alice
  mythex agent maintenance off
  mythex agent maintenance status --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMaintenanceStatus(cmd.Context(), conn, os.Stdout)
		},
	}
	conn.register(cmd)

	var on struct {
		d      time.Duration
		reason string
		by     string
	}
	onCmd := &cobra.Command{
		Use:   "on --for DURATION --reason TEXT",
		Short: "Pause healing for --for, saying why",
		Example: `  mythex agent maintenance on --for 30m --reason "db optimize"
  mythex agent maintenance on --for 45m --reason "reindex" --agent 127.0.0.1:9202`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if on.d <= 0 {
				return usagef("--for %v: give how long healing stays paused, more than 0, e.g. --for 30m", on.d)
			}
			if on.reason == "" {
				return usagef("--reason is empty: say why healing is paused, e.g. --reason \"db optimize\"")
			}
			c, name, done, err := conn.client(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			by := on.by
			if by == "" {
				by = auth.WhoAmI()
			}
			rep, err := c.SetMaintenance(cmd.Context(), on.d, on.reason, by)
			if err != nil {
				return agentErr(err)
			}
			return printMaintenance(os.Stdout, conn.asJSON, rep, func(w io.Writer) {
				termui.WriteMaintenanceOn(w, name, rep, on.d, "mythex agent maintenance"+conn.again()+" off")
			})
		},
	}
	onCmd.Flags().DurationVar(&on.d, "for", 0, "how long healing stays paused (required; at most 168h)")
	onCmd.Flags().StringVar(&on.reason, "reason", "", "why (required), shown in status")
	onCmd.Flags().StringVar(&on.by, "by", "", "who asks (default $USER@hostname)")

	offCmd := &cobra.Command{
		Use:     "off",
		Short:   "End maintenance now; healing resumes",
		Example: `  mythex agent maintenance off`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, name, done, err := conn.client(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			rep, err := c.EndMaintenance(cmd.Context(), auth.WhoAmI())
			if err != nil {
				return agentErr(err)
			}
			return printMaintenance(os.Stdout, conn.asJSON, rep, func(w io.Writer) {
				termui.WriteMaintenanceOff(w, name, rep)
			})
		},
	}
	statusCmd := &cobra.Command{
		Use:     "status",
		Short:   "Show the maintenance window in force",
		Example: `  mythex agent maintenance status --agent 127.0.0.1:9202`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMaintenanceStatus(cmd.Context(), conn, os.Stdout)
		},
	}
	cmd.AddCommand(onCmd, offCmd, statusCmd)
	return cmd
}

func runMaintenanceStatus(ctx context.Context, conn agentConnFlags, out io.Writer) error {
	c, name, done, err := conn.client(ctx)
	if err != nil {
		return err
	}
	defer done()
	rep, err := c.Maintenance(ctx)
	if err != nil {
		return agentErr(err)
	}
	return printMaintenance(out, conn.asJSON, rep, func(w io.Writer) {
		termui.WriteMaintenance(w, name, rep, time.Now())
	})
}

func printMaintenance(out io.Writer, asJSON bool, rep agentapi.MaintenanceReport, text func(io.Writer)) error {
	if asJSON {
		return termui.WriteJSON(out, rep)
	}
	text(out)
	return nil
}

// agentErr maps the agent's refusals of bad input to exit code 2.
func agentErr(err error) error {
	if isBadRequest(err) {
		return withCode(exitBadUse, err)
	}
	return err
}

func isBadRequest(err error) bool {
	return err != nil && (errors.Is(err, agentapi.ErrBadRequest) || errors.Is(err, agentapi.ErrUnauthorized) || errors.Is(err, agentapi.ErrUnreachable))
}

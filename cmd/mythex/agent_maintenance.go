package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/user"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/fleet"
)

// agentConnFlags say which agent to talk to.
type agentConnFlags struct {
	agent     string
	file      string
	host      string
	tokenFile string
	asJSON    bool
}

func (c *agentConnFlags) register(cmd *cobra.Command) {
	fl := cmd.PersistentFlags()
	fl.StringVar(&c.agent, "agent", "", "the agent's API address (default hosts[].agent of --host with -f, else 127.0.0.1:9201)")
	fl.StringVarP(&c.file, "file", "f", "", "fleet config (mythex.yml): find the agent of --host")
	fl.StringVar(&c.host, "host", "", "the host whose agent to ask, with -f (default: the machine's host name)")
	fl.StringVar(&c.tokenFile, "token-file", "", "file holding the agent's bearer token (default $"+agentTokenEnv+")")
	fl.BoolVar(&c.asJSON, "json", false, "print the agent's answer as JSON")
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

// client returns a client for the agent the flags name.
func (c *agentConnFlags) client() (*agentapi.Client, string, error) {
	token, err := auth.LoadToken(c.tokenFile, agentTokenEnv)
	if err != nil {
		return nil, "", usagef("agent token: %v", err)
	}
	addr, name := c.agent, c.host
	if addr == "" && c.file != "" {
		cfg, err := fleet.Load(c.file)
		if err != nil {
			return nil, "", err
		}
		if name == "" {
			name, _ = os.Hostname()
		}
		h, ok := findHost(&cfg.Config, name)
		if !ok {
			return nil, "", usagef("--host %q is not in %s (hosts: %s)", name, c.file, hostNames(&cfg.Config))
		}
		if h.Agent == "" {
			return nil, "", usagef("hosts[%s].agent is not set in %s; give --agent", name, c.file)
		}
		addr = h.Agent
	}
	if addr == "" {
		addr = "127.0.0.1:9201"
	}
	if name == "" {
		name = addr
	}
	return agentapi.NewClient(addr, token, &http.Client{Timeout: 30 * time.Second}), name, nil
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
			c, name, err := conn.client()
			if err != nil {
				return err
			}
			by := on.by
			if by == "" {
				by = whoAmI()
			}
			rep, err := c.SetMaintenance(cmd.Context(), on.d, on.reason, by)
			if err != nil {
				return agentErr(err)
			}
			return printMaintenance(os.Stdout, conn.asJSON, rep, func(w io.Writer) {
				m := rep.Maintenance
				fmt.Fprintf(w, "%s: maintenance on until %s (%s): %s (by %s)\nthe watchdog reports but heals nothing until then; end it early with: mythex agent maintenance%s off\n",
					name, m.Until.Local().Format(time.RFC3339), on.d, m.Reason, orDash(m.By), conn.again())
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
			c, name, err := conn.client()
			if err != nil {
				return err
			}
			rep, err := c.EndMaintenance(cmd.Context(), whoAmI())
			if err != nil {
				return agentErr(err)
			}
			return printMaintenance(os.Stdout, conn.asJSON, rep, func(w io.Writer) {
				if rep.Ended == nil {
					fmt.Fprintf(w, "%s: no maintenance was on\n", name)
					return
				}
				fmt.Fprintf(w, "%s: maintenance off (was: %s, by %s); healing resumes\n", name, rep.Ended.Reason, orDash(rep.Ended.By))
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
	c, name, err := conn.client()
	if err != nil {
		return err
	}
	rep, err := c.Maintenance(ctx)
	if err != nil {
		return agentErr(err)
	}
	return printMaintenance(out, conn.asJSON, rep, func(w io.Writer) {
		m := rep.Maintenance
		if m == nil {
			fmt.Fprintf(w, "%s: no maintenance; the watchdog heals\n", name)
			return
		}
		fmt.Fprintf(w, "%s: maintenance on until %s (%s left): %s (by %s)\n",
			name, m.Until.Local().Format(time.RFC3339), time.Until(m.Until).Round(time.Second), m.Reason, orDash(m.By))
	})
}

func printMaintenance(out io.Writer, asJSON bool, rep agentapi.MaintenanceReport, text func(io.Writer)) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
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

// whoAmI is user@host, for the record of who turned maintenance on or off.
func whoAmI() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && name == "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}

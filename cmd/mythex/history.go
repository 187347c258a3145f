package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/history"
	"github.com/mythex/mythex/internal/termui"
)

type historyFlags struct {
	file              string
	agentTokenFile    string
	limit             int
	asJSON            bool
	timeout           time.Duration
	insecurePlaintext bool
}

func newHistoryCmd() *cobra.Command {
	var f historyFlags
	cmd := &cobra.Command{
		Use:   "history -f mythex.yml",
		Short: "Every deploy and rollback of the fleet: who, when, from → to, result, per-host phases",
		Long: `history asks every host's agent for its deploy records and merges them by
deploy id: who deployed, when, from which version to which, the result, each
host's own outcome and phase times, and why a deploy failed or was rolled back.
The records live on the hosts (history.db in each agent's state dir), so the
answer is the same whoever asks, from whichever machine. A host that cannot be
reached is named, and the others are still shown.

Publishes onto a machines platform have their own: mythex publish history.

Exit status: 0 shown; 1 some host could not be read; 2 bad input.`,
		Example: `  go run ./cmd/mythex history -f examples/local/mythex.yml
  go run ./cmd/mythex history -f examples/local/mythex.yml --limit 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := fleet.Load(f.file)
			if err != nil {
				return withCode(exitBadUse, err)
			}
			return runHistory(cmd.Context(), cfg, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "file", "f", "mythex.yml", "fleet config")
	fl.StringVar(&f.agentTokenFile, "agent-token-file", "", "file holding the agents' bearer token (default $"+agentTokenEnv+")")
	fl.IntVar(&f.limit, "limit", 20, "show the newest N deploys (0: all)")
	fl.BoolVar(&f.asJSON, "json", false, "print the deploys as a JSON array")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Second, "bound on reading every host")
	fl.BoolVar(&f.insecurePlaintext, "insecure-plaintext", false, "allow plain HTTP to agents beyond loopback")
	return cmd
}

func runHistory(ctx context.Context, cfg *fleet.Loaded, f historyFlags, out, errOut io.Writer) error {
	if f.limit < 0 {
		return usagef("--limit %d: give a count, 0 for all", f.limit)
	}
	if len(cfg.Hosts) == 0 {
		return usagef("%s lists no hosts: history is kept on the hosts' agents", cfg.Path)
	}
	token, err := auth.LoadToken(f.agentTokenFile, agentTokenEnv)
	if err != nil {
		return usagef("agent token: %v", err)
	}
	pool := agentconn.NewPool(agentconn.Options{InsecurePlaintext: f.insecurePlaintext, Warn: errOut, Timeout: f.timeout})
	defer pool.Close()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	all, unread := pool.Histories(ctx, cfg, token, f.limit)
	deploys := history.Merge(all, f.limit)
	if f.asJSON {
		if deploys == nil {
			deploys = []history.Deploy{}
		}
		b, err := json.MarshalIndent(deploys, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s\n", b)
	} else {
		termui.WriteHistory(out, deploys)
	}
	if len(unread) > 0 {
		fmt.Fprintf(errOut, "could not read the history of: %s\n", strings.Join(unread, "; "))
		return silentExit(exitFailed)
	}
	return nil
}

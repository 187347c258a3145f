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
	"github.com/mythex/mythex/internal/fleethistory"
	"github.com/mythex/mythex/internal/history"
	"github.com/mythex/mythex/internal/report"
	"github.com/mythex/mythex/internal/termui"
)

type historyFlags struct {
	file              string
	agentTokenFile    string
	limit             int
	id                string
	report            string
	asJSON            bool
	timeout           time.Duration
	insecurePlaintext bool
}

func newHistoryCmd() *cobra.Command {
	var f historyFlags
	cmd := &cobra.Command{
		Use:   "history -f mythex.yml [--id ID] [--report FILE.html]",
		Short: "Every deploy and rollback of the fleet: who, when, from → to, result, per-host phases",
		Long: `history asks every host's agent for its deploy records and merges them by
deploy id: who deployed, when, from which version to which, the result, each
host's own outcome and phase times, and why a deploy failed or was rolled back.
The records live on the hosts (history.db in each agent's state dir), so the
answer is the same whoever asks, from whichever machine. A host that cannot be
reached is named, and the others are still shown.

--id ID shows that deploy only. --report FILE.html draws it (the newest
deploy without --id) as the same self-contained HTML report deploy --report
writes: each deploy keeps its recording — phase events, the load balancer's
view of each target, and with deploy --measure the requests second by
second — on every host's agent beside its record (the newest 200 deploys
per host). A deploy recorded by an older mythex, or to older agents, has
none, and says so.

Publishes onto a machines platform have their own: mythex publish history.

Exit status: 0 shown; 1 some host could not be read, or the deploy's
timeline could not be read; 2 bad input (a --id no host knows).`,
		Example: `  go run ./cmd/mythex history -f examples/local/mythex.yml
  go run ./cmd/mythex history -f examples/local/mythex.yml --limit 5 --json
  go run ./cmd/mythex history -f examples/local/mythex.yml --report last-deploy.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkReportPath(f.report); err != nil {
				return err
			}
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
	fl.StringVar(&f.id, "id", "", "show only the deploy with this id (as history lists it)")
	fl.StringVar(&f.report, "report", "", "write an HTML report of the deploy (--id, else the newest) to this file, from the recording its hosts keep")
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
	r := fleethistory.NewReader(cfg, pool, token)
	q := fleethistory.Query{Limit: f.limit, ID: f.id}
	if f.report != "" && f.id == "" {
		q.Limit = 1 // the newest deploy
	}
	res := r.Read(ctx, q)
	unread := func() {
		if len(res.Unread) > 0 {
			fmt.Fprintf(errOut, "could not read the history of: %s\n", strings.Join(res.Unread, "; "))
		}
	}
	deploys := res.Deploys
	if f.id != "" || f.report != "" {
		d, err := history.Pick(deploys, f.id)
		if err != nil {
			unread()
			if len(res.Unread) > 0 {
				return withCode(exitFailed, err)
			}
			return withCode(exitBadUse, fmt.Errorf("%w; mythex history -f %s lists the deploys and their ids", err, cfg.Path))
		}
		deploys = []history.Deploy{d}
	}
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
	if f.report != "" {
		rec, _, err := r.Timeline(ctx, deploys[0])
		if err != nil {
			unread()
			return withCode(exitFailed, err)
		}
		progress := out
		if f.asJSON {
			progress = errOut
		}
		if err := report.WriteFile(f.report, rec, progress); err != nil {
			return withCode(exitFailed, err)
		}
	}
	if len(res.Unread) > 0 {
		unread()
		return silentExit(exitFailed)
	}
	return nil
}

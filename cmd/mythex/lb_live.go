package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/alb"
	"github.com/mythex/mythex/internal/lbport/fleetlb"
	"github.com/mythex/mythex/internal/termui"
	"github.com/mythex/mythex/internal/timing"
)

// liveCallTimeout bounds reading or applying a target group's settings.
const liveCallTimeout = 2 * time.Minute

// openLB opens the driver of cfg's load balancer; the embedded LB's token
// comes from tokenFile, load_balancer.admin_token_file or $MYTHEX_LB_TOKEN.
// Bad config is exit 2.
func openLB(ctx context.Context, cfg *fleet.Loaded, tokenFile string) (lbport.Driver, error) {
	var o fleetlb.Options
	if cfg.LoadBalancer.Kind == fleet.KindEmbedded {
		tok, err := auth.LoadToken(firstNonEmpty(tokenFile, cfg.AdminTokenPath()), lbTokenEnv)
		if err != nil {
			return nil, withCode(exitBadUse, err)
		}
		o.EmbeddedToken = tok
	}
	d, err := fleetlb.Open(ctx, cfg.LoadBalancer, o)
	if err != nil {
		var fe *fleet.FieldError
		if errors.As(err, &fe) && fe.File == "" {
			fe.File = cfg.Path
		}
		return nil, lbExit(err)
	}
	return d, nil
}

// lbExit gives a load balancer error its exit status: what the user must
// fix (credentials, ARN, target, config, an LB that cannot do it) is 2,
// nothing having changed; the rest 1.
func lbExit(err error) error {
	switch {
	case errors.Is(err, lbport.ErrUnauthorized), errors.Is(err, lbport.ErrTargetGroupNotFound),
		errors.Is(err, lbport.ErrInvalidTarget), errors.Is(err, lbport.ErrUnsupported), errors.Is(err, lbport.ErrInvalidSettings),
		errors.Is(err, alb.ErrConfig), errors.Is(err, fleet.ErrInvalid):
		return withCode(exitBadUse, err)
	}
	return err
}

// runCheckLive is `mythex check --live`: the invariants on the live target
// group's numbers, and every field where it differs from the file. Exit 1
// when an invariant fails or anything differs.
func runCheckLive(cmd *cobra.Command, file, tokenFile string, asJSON bool) error {
	l, err := loadFleet(file)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), liveCallTimeout)
	defer cancel()
	d, err := openLB(ctx, l, tokenFile)
	if err != nil {
		return err
	}
	live, err := d.Settings(ctx)
	if errors.Is(err, lbport.ErrUnsupported) {
		return usagef("check --live reads a target group through its API (kind alb or embedded); the %s load balancer cannot report its settings", l.LoadBalancer.Kind)
	}
	if err != nil {
		return lbExit(fmt.Errorf("read the live target group: %w", err))
	}
	drift := fleetlb.Drift(fleetlb.Want(l.LoadBalancer), live)
	rep := timing.Check(fleetlb.WithLive(l.Config, live))
	out := cmd.OutOrStdout()
	if asJSON {
		var b bytes.Buffer
		if err := termui.WriteCheckJSON(&b, file, rep); err != nil {
			return err
		}
		v := termui.LiveCheckJSON{File: file, Kind: l.LoadBalancer.Kind, OK: rep.OK() && len(drift) == 0, Drift: drift, Check: b.Bytes()}
		if err := termui.WriteJSON(out, v); err != nil {
			return err
		}
	} else {
		termui.WriteDrift(out, l.LoadBalancer, drift)
		if err := termui.WriteCheckText(out, file+" (live numbers)", rep, termui.Color(out)); err != nil {
			return err
		}
	}
	if !rep.OK() || len(drift) > 0 {
		return silentExit(exitFailed)
	}
	return nil
}

func newLBApplyCmd() *cobra.Command {
	var (
		file, tokenFile string
		dryRun, asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "apply [-f mythex.yml] [--dry-run] [--json]",
		Short: "Set the live target group's health check, deregistration delay and algorithm from mythex.yml",
		Long: `apply makes the load balancer's target group match mythex.yml: the health check
(path, interval, timeout, healthy and unhealthy thresholds) through ModifyTargetGroup,
the deregistration delay and algorithm through ModifyTargetGroupAttributes.

It first runs mythex check on the file and refuses numbers that fail it (exit 2,
nothing changed), then reads the live settings and changes only what differs.
--dry-run lists the changes and makes none.

Kind alb: target_group_arn, region and endpoint from mythex.yml, credentials from
the AWS SDK's default chain (docs/alb.md lists the IAM actions). Kind embedded: the
admin API at load_balancer.admin_listen (PUT /v1/settings), with --token-file or
$MYTHEX_LB_TOKEN; the settings last until the LB restarts and reads its own
mythex.yml again.

Exit status: 0 applied (or nothing to change), 1 the load balancer failed the
call, 2 bad input or refused credentials (nothing changed).`,
		Example: `  # rehearse on the local example fleet: its LB started with a key pair answers the ELBv2 API
  MYTHEX_LB_AWS_ACCESS_KEY_ID=AKIAEXAMPLE MYTHEX_LB_AWS_SECRET_ACCESS_KEY=secret mythex lb -f examples/local/mythex.yml &
  AWS_ACCESS_KEY_ID=AKIAEXAMPLE AWS_SECRET_ACCESS_KEY=secret mythex lb apply -f examples/local/alb.yml --dry-run

  # what would change
  mythex lb apply -f mythex.yml --dry-run

  # the local demo's embedded LB (mythex lb -f examples/local/mythex.yml running)
  mythex lb apply -f examples/local/mythex.yml --dry-run

  # apply, for a CI log
  mythex lb apply -f mythex.yml --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := loadFleet(file)
			if err != nil {
				return err
			}
			if rep := timing.Check(l.Config); !rep.OK() {
				return usagef("%s fails mythex check (%s): apply refuses numbers that break the timing model; run mythex check -f %s",
					file, strings.Join(rep.Failed(), ", "), file)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), liveCallTimeout)
			defer cancel()
			d, err := openLB(ctx, l, tokenFile)
			if err != nil {
				return err
			}
			live, err := d.Settings(ctx)
			if errors.Is(err, lbport.ErrUnsupported) {
				return usagef("lb apply changes a target group through its API (kind alb or embedded); the %s load balancer's settings cannot be changed through it", l.LoadBalancer.Kind)
			}
			if err != nil {
				return lbExit(fmt.Errorf("read the live target group: %w", err))
			}
			want := fleetlb.Want(l.LoadBalancer)
			want.SlowStart = 0
			changes := fleetlb.Drift(want, live)
			applied := false
			if len(changes) > 0 && !dryRun {
				if err := d.Apply(ctx, want); err != nil {
					return lbExit(fmt.Errorf("apply: %w", err))
				}
				applied = true
			}
			if asJSON {
				return termui.WriteJSON(cmd.OutOrStdout(), termui.LBApplyJSON{File: file, DryRun: dryRun, Applied: applied, Changes: changes})
			}
			termui.WriteLBApply(cmd.OutOrStdout(), file, changes, dryRun)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "mythex.yml", "fleet config whose numbers to apply")
	f.StringVar(&tokenFile, "token-file", "", "the embedded LB's admin token file (kind embedded)")
	f.BoolVar(&dryRun, "dry-run", false, "list the changes, make none")
	f.BoolVar(&asJSON, "json", false, "print the changes as JSON")
	return cmd
}

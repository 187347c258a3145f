package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lb"
)

// lbTokenEnv is the environment variable the admin token is read from when no
// token file is given.
const lbTokenEnv = "MYTHEX_LB_TOKEN"

func newLBCmd() *cobra.Command {
	var (
		file, listen, adminListen, tokenFile, algorithm, logFormat string
		elbv2KeyFile                                               string
		elbv2Throttle                                              float64
		allowRemote                                                bool
	)
	cmd := &cobra.Command{
		Use:   "lb",
		Short: "Run the embedded load balancer (ALB target-group semantics) in front of the fleet's hosts",
		Long: `Run mythex's embedded HTTP load balancer in front of the hosts of mythex.yml.

Every host is registered at start (id = hosts[i].name, address = hosts[i].target)
and health-checked as an AWS ALB target group does it: GET health_check.path every
interval, success = 200, healthy after one pass when new and after healthy_threshold
passes when recovering, unhealthy after unhealthy_threshold failures. When no target
is healthy the LB fails open and routes to all of them. A deregistered target drains:
no new requests, in-flight ones finish until deregistration_delay. Failed requests are
not retried: a refused or reset connection is a 502, a target slower than idle_timeout
a 504, each marked with the X-Mythex-Lb header.

The admin API (register/deregister targets, target state, /metrics) listens on
admin_listen, loopback only unless --insecure-plaintext, and needs a bearer token
from --token-file, load_balancer.admin_token_file or $MYTHEX_LB_TOKEN.

The admin listener also answers the ELBv2 API (AWS Query protocol, POST /, version
2015-12-01) for its one target group when given an AWS key pair: --elbv2-key-file (one
line "ACCESS_KEY_ID SECRET_ACCESS_KEY") or $MYTHEX_LB_AWS_ACCESS_KEY_ID and
$MYTHEX_LB_AWS_SECRET_ACCESS_KEY. Requests must be SigV4-signed with it for
load_balancer.region (default us-east-1); the target group's ARN is
load_balancer.target_group_arn or a default. So the alb driver, the AWS SDKs and the
AWS CLI (--endpoint-url) can drive it. --elbv2-throttle N answers only N calls per second
(ThrottlingException beyond), to rehearse a throttled account.

State changes are logged; requests are not. SIGINT or SIGTERM shut it down cleanly.`,
		Example: `  # run the LB of the local example fleet; the token from the environment, where deploy and status find it too
  export MYTHEX_LB_TOKEN=$(openssl rand -hex 32)
  mythex lb -f examples/local/mythex.yml

  # other addresses, token from a file, JSON logs
  mythex lb -f mythex.yml --listen 127.0.0.1:8080 --admin-listen 127.0.0.1:8079 \
      --token-file /etc/mythex/lb.token --log-format json

  # watch the targets
  curl -H "Authorization: Bearer $MYTHEX_LB_TOKEN" http://127.0.0.1:9079/v1/targets

  # also answer the ELBv2 API, and ask it with the AWS CLI
  MYTHEX_LB_AWS_ACCESS_KEY_ID=AKIAEXAMPLE MYTHEX_LB_AWS_SECRET_ACCESS_KEY=secret mythex lb -f examples/local/mythex.yml
  AWS_ACCESS_KEY_ID=AKIAEXAMPLE AWS_SECRET_ACCESS_KEY=secret aws elbv2 describe-target-health \
      --region us-east-1 --endpoint-url http://127.0.0.1:9079 \
      --target-group-arn arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/mythex/6d79746865786c62`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadFleet(file)
			if err != nil {
				return err
			}
			lbc := cfg.LoadBalancer
			if cmd.Flags().Changed("listen") {
				lbc.Listen = listen
			}
			if cmd.Flags().Changed("admin-listen") {
				lbc.AdminListen = adminListen
			}
			if cmd.Flags().Changed("algorithm") {
				lbc.Algorithm = algorithm
			}
			if lbc.Kind != fleet.KindEmbedded && lbc.Kind != fleet.KindALB {
				return usagef("load_balancer.kind is %q; mythex lb runs the embedded kind, or stands in for an ALB (kind alb) through its ELBv2 endpoint", lbc.Kind)
			}
			elbv2, err := elbv2Options(lbc, elbv2KeyFile, elbv2Throttle)
			if err != nil {
				return err
			}
			if lbc.Kind == fleet.KindALB && elbv2 == nil {
				return usagef("load_balancer.kind is alb: mythex lb stands in for the ALB only through its ELBv2 endpoint; give it a key pair (--elbv2-key-file or $%s and $%s)", lb.ELBv2KeyIDEnv, lb.ELBv2SecretEnv)
			}
			settings, err := lb.SettingsFromFleet(lbc)
			if err != nil {
				return err
			}
			if err := lb.CheckAdminAddress(lbc.AdminListen, allowRemote); err != nil {
				return usagef("%v", err)
			}
			if !auth.IsLoopback(lbc.AdminListen) {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: the admin API serves plain HTTP on %s (--insecure-plaintext): its token, which can take every target out of rotation, crosses the network in clear\n", lbc.AdminListen)
			}
			token, err := auth.LoadAdminToken(firstNonEmpty(tokenFile, cfg.AdminTokenPath()), lbTokenEnv, "--token-file or load_balancer.admin_token_file")
			if err != nil {
				if errors.Is(err, auth.ErrNoToken) || errors.Is(err, auth.ErrShortToken) {
					return usagef("the admin API needs a bearer token of at least %d bytes: %v", auth.MinTokenBytes, err)
				}
				return withCode(exitBadUse, err)
			}
			log, err := newLogger(cmd, logFormat)
			if err != nil {
				return err
			}

			srv, err := lb.New(lb.Options{Settings: settings, Token: token, Logger: log, ELBv2: elbv2})
			if err != nil {
				return err
			}
			targets := make([]lb.StartTarget, len(cfg.Hosts))
			for i, h := range cfg.Hosts {
				targets[i] = lb.StartTarget{ID: h.Name, Address: h.Target}
			}
			err = srv.ListenAndServe(cmd.Context(), lbc.Listen, lbc.AdminListen, targets)
			if _, ok := errors.AsType[*lb.RegisterError](err); ok {
				return withCode(exitBadUse, err)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "mythex.yml", "fleet config file")
	f.StringVar(&listen, "listen", "", "traffic address host:port (default: load_balancer.listen)")
	f.StringVar(&adminListen, "admin-listen", "", "admin API address host:port (default: load_balancer.admin_listen)")
	f.StringVar(&tokenFile, "token-file", "", "file holding the admin bearer token (default: load_balancer.admin_token_file, else $"+lbTokenEnv+")")
	f.StringVar(&algorithm, "algorithm", "", "round_robin or least_outstanding_requests (default: load_balancer.algorithm)")
	f.StringVar(&elbv2KeyFile, "elbv2-key-file", "", "file holding the ELBv2 endpoint's key pair, one line \"ACCESS_KEY_ID SECRET_ACCESS_KEY\" (default: $"+lb.ELBv2KeyIDEnv+" and $"+lb.ELBv2SecretEnv+"; neither: no ELBv2 endpoint)")
	f.Float64Var(&elbv2Throttle, "elbv2-throttle", 0, "answer at most this many ELBv2 calls per second, ThrottlingException beyond (0: no limit)")
	f.BoolVar(&allowRemote, "insecure-plaintext", false, "serve the admin API in plain HTTP on an address beyond loopback (the token then crosses the network in clear), as mythex agent --insecure-plaintext")
	f.BoolVar(&allowRemote, "admin-allow-remote", false, "old name of --insecure-plaintext")
	_ = f.MarkDeprecated("admin-allow-remote", "use --insecure-plaintext")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	cmd.AddCommand(newLBApplyCmd())
	return cmd
}

// elbv2Options builds the ELBv2 endpoint's options from the key file or the
// environment; nil when neither gives a key pair (no endpoint).
func elbv2Options(lbc fleet.LoadBalancer, keyFile string, throttle float64) (*lb.ELBv2Options, error) {
	if throttle < 0 {
		return nil, usagef("--elbv2-throttle must be 0 (no limit) or more calls per second, got %v", throttle)
	}
	key, ok, err := lb.LoadELBv2Key(keyFile)
	if errors.Is(err, lb.ErrKeyFile) {
		return nil, usagef("--elbv2-key-file: %v", err)
	} else if err != nil {
		return nil, usagef("%v", err)
	} else if !ok {
		return nil, nil
	}
	o := &lb.ELBv2Options{Key: key, Region: lbc.Region, TargetGroupARN: lbc.TargetGroupARN, Throttle: throttle}
	if err := o.Validate(); err != nil {
		return nil, usagef("%v", err)
	}
	return o, nil
}

// newLogger returns a slog logger on the command's stderr in format.
func newLogger(cmd *cobra.Command, format string) (*slog.Logger, error) {
	w := cmd.ErrOrStderr()
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, usagef("--log-format must be text or json, got %q", format)
}

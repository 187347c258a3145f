package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"

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
admin_listen, loopback only unless --admin-allow-remote, and needs a bearer token
from --token-file, load_balancer.admin_token_file or $MYTHEX_LB_TOKEN.

State changes are logged; requests are not. SIGINT or SIGTERM shut it down cleanly.`,
		Example: `  # run the LB of the seed fleet, token from the environment
  MYTHEX_LB_TOKEN=$(openssl rand -hex 32) mythex lb -f examples/seed/after.yml

  # other addresses, token from a file, JSON logs
  mythex lb -f mythex.yml --listen 127.0.0.1:8080 --admin-listen 127.0.0.1:8079 \
      --token-file /etc/mythex/lb.token --log-format json

  # watch the targets
  curl -H "Authorization: Bearer $MYTHEX_LB_TOKEN" http://127.0.0.1:9079/v1/targets`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := fleet.Load(file)
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
			if lbc.Kind != fleet.KindEmbedded {
				return usagef("load_balancer.kind is %q; mythex lb runs only the embedded kind", lbc.Kind)
			}
			settings, err := lb.SettingsFromFleet(lbc)
			if err != nil {
				return err
			}
			if err := lb.CheckAdminAddress(lbc.AdminListen, allowRemote); err != nil {
				return usagef("%v", err)
			}
			if tokenFile == "" && lbc.AdminTokenFile != "" {
				tokenFile = lbc.AdminTokenFile
				if !filepath.IsAbs(tokenFile) {
					tokenFile = filepath.Join(cfg.Dir(), tokenFile)
				}
			}
			token, err := auth.LoadAdminToken(tokenFile, lbTokenEnv, "--token-file or load_balancer.admin_token_file")
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

			srv, err := lb.New(lb.Options{Settings: settings, Token: token, Logger: log})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", lbc.Listen)
			if err != nil {
				srv.Group.Close()
				return fmt.Errorf("listen on %s (load_balancer.listen): %w", lbc.Listen, err)
			}
			adminLn, err := net.Listen("tcp", lbc.AdminListen)
			if err != nil {
				ln.Close()
				srv.Group.Close()
				return fmt.Errorf("listen on %s (load_balancer.admin_listen): %w", lbc.AdminListen, err)
			}
			log.Info("mythex lb started", "listen", ln.Addr().String(), "admin", adminLn.Addr().String(),
				"targets", len(cfg.Hosts), "algorithm", settings.Algorithm.String(),
				"health_check_interval", settings.HealthCheckInterval, "healthy_threshold", settings.Thresholds.Healthy,
				"unhealthy_threshold", settings.Thresholds.Unhealthy, "deregistration_delay", settings.DeregistrationDelay,
				"idle_timeout", settings.IdleTimeout)
			for _, h := range cfg.Hosts {
				if _, err := srv.Group.Register(h.Name, h.Target); err != nil {
					ln.Close()
					adminLn.Close()
					srv.Group.Close()
					return withCode(exitBadUse, fmt.Errorf("register host %s: %w", h.Name, err))
				}
			}
			err = srv.Serve(cmd.Context(), ln, adminLn)
			log.Info("mythex lb stopped")
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "mythex.yml", "fleet config file")
	f.StringVar(&listen, "listen", "", "traffic address host:port (default: load_balancer.listen)")
	f.StringVar(&adminListen, "admin-listen", "", "admin API address host:port (default: load_balancer.admin_listen)")
	f.StringVar(&tokenFile, "token-file", "", "file holding the admin bearer token (default: load_balancer.admin_token_file, else $"+lbTokenEnv+")")
	f.StringVar(&algorithm, "algorithm", "", "round_robin or least_outstanding_requests (default: load_balancer.algorithm)")
	f.BoolVar(&allowRemote, "admin-allow-remote", false, "allow an admin address beyond loopback (the token still applies)")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	return cmd
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

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/transport"
)

// newCertsCmd is `mythex certs init|issue`: a small fleet CA and the
// certificates agents and deployers use for TLS with client certificates.
func newCertsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Make a fleet CA and TLS certificates for agents and deployers (for hosts without SSH)",
		Long: `certs makes what TLS with client certificates needs, for teams that have no CA:
a fleet CA (init), a server certificate per agent and a client certificate per
deployer (issue). Keys are ECDSA P-256, written with mode 0600 and never
overwritten. Agents then run with --tls-cert, --tls-key and --client-ca; the
deployer's mythex.yml names its files under agent_tls. Prefer hosts[].ssh where
the hosts run sshd: it opens no port at all.

Exit status: 0 written; 2 bad input or a file that already exists.`,
		Example: `  go run ./cmd/mythex certs init --dir certs
  go run ./cmd/mythex certs issue --dir certs --name web-1 --server --host 10.0.0.5 --host web-1.internal
  go run ./cmd/mythex certs issue --dir certs --name deployer --client`,
	}
	cmd.AddCommand(newCertsInitCmd(), newCertsIssueCmd())
	return cmd
}

func newCertsInitCmd() *cobra.Command {
	var dir, name string
	var validity time.Duration
	cmd := &cobra.Command{
		Use:     "init",
		Short:   "Make a fleet CA (ca.crt, ca.key) in --dir",
		Example: `  go run ./cmd/mythex certs init --dir certs --validity 8760h`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if validity <= 0 {
				return usagef("--validity %v: give how long the CA is valid, e.g. 87600h", validity)
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return usagef("--dir %s: %v", dir, err)
			}
			if err := transport.InitCA(dir, name, validity, time.Now()); err != nil {
				return usagef("%v", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "fleet CA %q in %s (%s, %s); keep %s off the hosts\n", name, dir,
				transport.CACertFile, transport.CAKeyFile, filepath.Join(dir, transport.CAKeyFile))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "certs", "directory for ca.crt and ca.key")
	cmd.Flags().StringVar(&name, "name", "mythex fleet CA", "the CA's common name")
	cmd.Flags().DurationVar(&validity, "validity", 10*365*24*time.Hour, "how long the CA is valid")
	return cmd
}

// certsIssued is `certs issue --json`'s output.
type certsIssued struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
	Kind string `json:"kind"`
}

func newCertsIssueCmd() *cobra.Command {
	var dir, out, name string
	var server, client, asJSON bool
	var hosts []string
	var validity time.Duration
	cmd := &cobra.Command{
		Use:   "issue",
		Short: "Sign a server (agent) or client (deployer) certificate with the fleet CA",
		Example: `  go run ./cmd/mythex certs issue --dir certs --name web-1 --server --host 10.0.0.5
  go run ./cmd/mythex certs issue --dir certs --name deployer --client --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCertsIssue(cmd.OutOrStdout(), dir, firstNonEmpty(out, dir), name, server, client, hosts, validity, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "certs", "directory of the fleet CA (certs init)")
	f.StringVar(&out, "out", "", "directory for NAME.crt and NAME.key (default: --dir)")
	f.StringVar(&name, "name", "", "certificate name: the host's name for --server, e.g. web-1 (required)")
	f.BoolVar(&server, "server", false, "an agent's certificate (TLS server auth); needs --host")
	f.BoolVar(&client, "client", false, "a deployer's certificate (TLS client auth)")
	f.StringArrayVar(&hosts, "host", nil, "a DNS name or IP address the agent answers on (repeatable)")
	f.DurationVar(&validity, "validity", 365*24*time.Hour, "how long the certificate is valid (at most the CA's)")
	f.BoolVar(&asJSON, "json", false, "print the files written as JSON")
	return cmd
}

func runCertsIssue(w io.Writer, dir, out, name string, server, client bool, hosts []string, validity time.Duration, asJSON bool) error {
	if server == client {
		return usagef("give exactly one of --server (an agent) and --client (a deployer)")
	}
	if name == "" {
		return usagef("--name is required, e.g. --name web-1")
	}
	if validity <= 0 {
		return usagef("--validity %v: give how long the certificate is valid, e.g. 8760h", validity)
	}
	usage, kind := transport.ClientCert, "client"
	if server {
		usage, kind = transport.ServerCert, "server"
		if len(hosts) == 0 {
			return usagef("--server needs at least one --host (the agent's IP or DNS name as deployers dial it)")
		}
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return usagef("--out %s: %v", out, err)
	}
	cert, err := transport.Issue(dir, out, name, usage, hosts, validity, time.Now())
	if err != nil {
		return usagef("%v", err)
	}
	res := certsIssued{Cert: cert, Key: filepath.Join(out, name+".key"), Kind: kind}
	if asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintf(w, "%s\n", b)
		return nil
	}
	fmt.Fprintf(w, "%s certificate %s and key %s\n", kind, res.Cert, res.Key)
	return nil
}

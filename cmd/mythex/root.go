package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/stopsignal"
)

// Exit codes shared by every subcommand.
const (
	exitOK      = 0
	exitFailed  = 1 // the job ran and found a failure (invariant violated, deploy failed, requests dropped)
	exitBadUse  = 2 // bad input: flags, config; nothing was changed
	exitUnknown = 3 // a verdict could not be reached
)

// exitError carries a specific exit code out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so that mythex exits with code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// silentExit makes mythex exit with code without printing anything more: the
// subcommand has already reported.
func silentExit(code int) error { return &exitError{code: code} }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "mythex",
		Short: "Deploys that drop zero requests; publishes that catch crashing apps",
		Long: `mythex rolls a new version across servers behind a load balancer one at a
time with a drain handshake, heals crashed services without fighting deploys,
gates publishes onto a machines platform, proves its timing relations and
measures a deploy by the requests that reached nothing.`,
		Example: `  # everything on this machine: a fleet, a rolling deploy under load, the dropped requests counted
  go run ./cmd/mythex demo

  # the local example fleet's timing relations, then a deploy of it (README: Run a fleet by hand)
  mythex check -f examples/local/mythex.yml
  mythex deploy -f examples/local/mythex.yml --version v2
  mythex status -f examples/local/mythex.yml`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &usageError{msg: err.Error()}
	})
	root.AddCommand(
		newVersionCmd(),
		newCheckCmd(),
		newSampleAppCmd(),
		newLBCmd(),
		newAgentCmd(),
		newDeployCmd(),
		newRollbackCmd(),
		newImageCmd(),
		newDemoCmd(),
		newMeasureCmd(),
		newPublishCmd(),
		newLeaseCmd(),
		newCertsCmd(),
		newStatusCmd(),
		newHistoryCmd(),
	)
	return root
}

// run executes the CLI with args and returns the process exit code. Errors are
// mapped to exit codes here, at one boundary.
func run(args []string) int {
	// SIGPIPE too when the output is gone: `mythex demo | head` must still
	// stop what it started (but an agent's client hanging up must not).
	ctx, stop := stopsignal.NotifyContext(context.Background())
	defer stop()
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "mythex:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "mythex:", err)
	if errors.Is(err, fleet.ErrInvalid) || isUsageError(err) || isCobraUsage(err) {
		return exitBadUse
	}
	return exitFailed
}

// cobraUsage are the beginnings of the errors cobra itself returns for bad
// command lines (it exports no types for them): a missing required flag, an
// unknown command, wrong arguments.
var cobraUsage = []string{
	"required flag(s)",
	"unknown command",
	"unknown flag",
	"unknown shorthand flag",
	"accepts ",
	"requires at least",
	"invalid argument",
	"flag needs an argument",
	"if any flags in the group",
}

// isCobraUsage tells cobra's command-line errors (exit 2) apart.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range cobraUsage {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// isUsageError tells cobra's flag and argument errors apart from failures.
func isUsageError(err error) bool {
	var ue *usageError
	return errors.As(err, &ue)
}

// loadFleet loads the fleet config at path; any error (unreadable file,
// invalid field) is bad input: exit 2, naming file, line and field.
func loadFleet(path string) (*fleet.Loaded, error) {
	l, err := fleet.Load(path)
	if err != nil {
		return nil, withCode(exitBadUse, err)
	}
	return l, nil
}

// keyValues parses repeated KEY=VALUE flag values; nil for none. A value
// without "=" or with an empty key is bad input naming flag.
func keyValues(flag string, kvs []string) (map[string]string, error) {
	var m map[string]string
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("%s %q: give KEY=VALUE", flag, kv)
		}
		if m == nil {
			m = map[string]string{}
		}
		m[k] = v
	}
	return m, nil
}

// usageError marks bad command-line use (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef returns a usage error (exit 2) with a formatted message.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

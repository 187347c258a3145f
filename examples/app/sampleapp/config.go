package sampleapp

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// envPrefix starts the environment variable of every flag:
// --drain-serve-period reads MYTHEX_APP_DRAIN_SERVE_PERIOD.
const envPrefix = "MYTHEX_APP_"

// errUsage marks bad command-line or environment input (exit 2).
var errUsage = errors.New("usage")

// config is the sample app's configuration (examples/app/README.md). Durations are
// wall-clock time; zero turns the crash and slow modes off.
type config struct {
	Listen     string // address to serve on (host:port)
	Service    string // service name it reports
	Version    string // version it reports
	HostName   string // host it reports; os.Hostname() when not given
	HealthPath string // health endpoint path

	DrainServePeriod time.Duration // D; 0 means none (shut down as soon as health flips)
	ShutdownTimeout  time.Duration // S; 0 means none (cut in-flight requests at once)
	IdleTimeout      time.Duration // keep-alive idle timeout; 0 means the drain default

	StartDelay    time.Duration // wait this long before listening
	CrashOnStart  time.Duration // exit 1 this long after start, never listening
	CrashAfter    time.Duration // exit CrashExitCode this long after start, after serving
	CrashExitCode int           // exit code for CrashAfter
	IgnoreSIGTERM bool          // ignore SIGTERM; only SIGKILL (or SIGINT) stops it
	Unhealthy     bool          // health always 503
	Latency       time.Duration // delay before answering each non-health request
}

// flagSet declares every flag on a new FlagSet named prog writing to out and returns it
// with the config it fills.
func flagSet(prog string, out io.Writer) (*flag.FlagSet, *config) {
	c := &config{}
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8081", "`address` to serve on (host:port; port 0 picks a free one, logged at start)")
	fs.StringVar(&c.Service, "service", "app", "service `name` it reports (api, orchestrator, gateway, publish-worker…)")
	fs.StringVar(&c.Version, "version", "dev", "`version` it reports")
	fs.StringVar(&c.HostName, "host-name", "", "host `name` it reports (default: os.Hostname())")
	fs.StringVar(&c.HealthPath, "health-path", "/healthz", "health endpoint `path`: 200 \"ok\" when serving, 503 \"draining\" once draining")
	fs.DurationVar(&c.DrainServePeriod, "drain-serve-period", 15*time.Second, "D: keep serving real traffic this long after health flips (0: none)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "S: graceful shutdown budget after D (0: none)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", 75*time.Second, "server keep-alive idle timeout (0: the drain default, 75s)")
	fs.DurationVar(&c.StartDelay, "start-delay", 0, "slow boot: wait this long before listening")
	fs.DurationVar(&c.CrashOnStart, "crash-on-start", 0, "boot crash: exit 1 this long after start, never listening (0: off)")
	fs.DurationVar(&c.CrashAfter, "crash-after", 0, "serve, then exit with --crash-exit-code this long after start (0: off)")
	fs.IntVar(&c.CrashExitCode, "crash-exit-code", 1, "exit `code` for --crash-after (0 gives an exit-0 loop)")
	fs.BoolVar(&c.IgnoreSIGTERM, "ignore-sigterm", false, "ignore SIGTERM (only SIGKILL stops it; SIGINT still drains)")
	fs.BoolVar(&c.Unhealthy, "unhealthy", false, "health path always answers 503 (never becomes healthy)")
	fs.DurationVar(&c.Latency, "latency", 0, "delay before answering each non-health request")
	return fs, c
}

// envName is the environment variable read for flag name.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseConfig reads the flags in args, then, for every flag not given on the
// command line, its MYTHEX_APP_* variable from getenv (a flag wins over its
// variable). Errors wrap errUsage and name the flag or variable; flag.ErrHelp
// is returned (wrapped) for -h. Usage goes to out.
func parseConfig(prog string, args []string, getenv func(string) string, out io.Writer) (config, error) {
	fs, c := flagSet(prog, out)
	fs.Usage = func() { usage(fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config{}, err
		}
		return config{}, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("%w: unexpected argument %q (flags only; or `app check URL`)", errUsage, fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		name := envName(f.Name)
		v := getenv(name)
		if given[f.Name] || v == "" || envErr != nil {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			envErr = fmt.Errorf("%w: %s=%q: %w (flag --%s)", errUsage, name, v, err, f.Name)
		}
	})
	if envErr != nil {
		return config{}, envErr
	}
	if err := c.validate(); err != nil {
		return config{}, err
	}
	if c.HostName == "" {
		h, err := os.Hostname()
		if err != nil {
			h = "unknown"
		}
		c.HostName = h
	}
	return *c, nil
}

// validate rejects values no mode can use. Errors wrap errUsage.
func (c *config) validate() error {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"drain-serve-period", c.DrainServePeriod},
		{"shutdown-timeout", c.ShutdownTimeout},
		{"idle-timeout", c.IdleTimeout},
		{"start-delay", c.StartDelay},
		{"crash-on-start", c.CrashOnStart},
		{"crash-after", c.CrashAfter},
		{"latency", c.Latency},
	} {
		if d.v < 0 {
			return fmt.Errorf("%w: --%s (%s) is %s; it must be 0 or positive", errUsage, d.flag, envName(d.flag), d.v)
		}
	}
	if c.CrashExitCode < 0 || c.CrashExitCode > 255 {
		return fmt.Errorf("%w: --crash-exit-code (%s) is %d; it must be 0–255", errUsage, envName("crash-exit-code"), c.CrashExitCode)
	}
	if !strings.HasPrefix(c.HealthPath, "/") {
		return fmt.Errorf("%w: --health-path (%s) is %q; it must start with \"/\"", errUsage, envName("health-path"), c.HealthPath)
	}
	if c.Listen == "" {
		return fmt.Errorf("%w: --listen (%s) is empty; give host:port, e.g. 127.0.0.1:8081", errUsage, envName("listen"))
	}
	return nil
}

// usage prints the flags with their environment variables.
func usage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintf(w, `%[1]s: mythex's sample HTTP service (drains on SIGTERM with package drain).

Usage:
  %[1]s [flags]        serve
  %[1]s check URL      exit 0 when URL answers 200 within 2s, else 1

Every flag also reads MYTHEX_APP_<FLAG> (e.g. --drain-serve-period reads
MYTHEX_APP_DRAIN_SERVE_PERIOD); the flag wins.

Examples:
  %[1]s --listen 127.0.0.1:9101 --service api --version v2
  MYTHEX_APP_CRASH_AFTER=3s MYTHEX_APP_CRASH_EXIT_CODE=0 %[1]s
  %[1]s check http://127.0.0.1:9101/healthz

Flags:
`, fs.Name())
	fs.VisitAll(func(f *flag.Flag) {
		name, help := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s %s\n    \t%s", f.Name, name, help)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "false" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, " [$%s]\n", envName(f.Name))
	})
}

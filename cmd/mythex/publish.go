package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/platform/fly"
	"github.com/mythex/mythex/internal/publish"
	"github.com/mythex/mythex/internal/publish/target"
	"github.com/mythex/mythex/internal/termui"
)

// publishTarget holds the flags that say where releases live and run: the
// state dir, the platform and its credentials, the router. publish,
// reconcile and history share them.
type publishTarget struct {
	stateDir    string
	platform    string
	localAPI    string
	flyURL      string
	flyToken    string
	lbAdmin     string
	lbTokenFile string
	// strategy and app, when set by publish, let router() pick Fly Proxy.
	strategy, app string
}

func (t *publishTarget) addFlags(fs *pflag.FlagSet, withPlatform bool) {
	fs.StringVar(&t.stateDir, "state-dir", defaultStateDir(), "directory of the release store (publish.db), the per-app locks and the local platform ($MYTHEX_STATE_DIR)")
	if !withPlatform {
		return
	}
	fs.StringVar(&t.platform, "platform", "local", "machines platform: local (processes under mythex publish local-platform), fly (Fly Machines API) or docker (Docker Engine)")
	fs.StringVar(&t.localAPI, "local-api", "", "URL of the local platform's API (default: read from the state dir, written by mythex publish local-platform)")
	fs.StringVar(&t.flyURL, "fly-api-url", fly.DefaultBaseURL, "Fly Machines API base URL")
	fs.StringVar(&t.flyToken, "fly-token", "", "Fly API token (default $"+fly.TokenEnv+")")
	fs.StringVar(&t.lbAdmin, "lb-admin", "", "the load balancer's admin API URL (mythex lb); with it, publishes are blue-green: traffic stays on the old machines until the new release is live")
	fs.StringVar(&t.lbTokenFile, "lb-token-file", "", "file holding the LB admin token (default $MYTHEX_LB_TOKEN)")
}

// defaultStateDir is $MYTHEX_STATE_DIR, else .mythex in the working directory.
func defaultStateDir() string {
	if d := os.Getenv("MYTHEX_STATE_DIR"); d != "" {
		return d
	}
	return ".mythex"
}

// options are the flags as target.Options.
func (t *publishTarget) options() target.Options {
	return target.Options{Platform: t.platform, StateDir: t.stateDir, LocalAPI: t.localAPI, FlyURL: t.flyURL, FlyToken: t.flyToken,
		LBAdmin: t.lbAdmin, LBToken: func() (string, error) { return auth.LoadToken(t.lbTokenFile, lbTokenEnv) },
		Strategy: publish.Strategy(t.strategy), App: t.app}
}

// openPlatform opens the platform the flags name: a *target.UsageError is
// exit 2, an engine that does not answer exit 3.
func (t *publishTarget) openPlatform() (platform.Platform, func(), error) {
	p, closeP, err := target.Platform(context.Background(), t.options())
	return p, closeP, targetErr(err)
}

// targetErr maps target's errors to exit codes.
func targetErr(err error) error {
	if _, ok := errors.AsType[*target.UsageError](err); ok {
		return usagef("%v", err)
	}
	if errors.Is(err, platform.ErrUnavailable) {
		return withCode(exitUnknown, err)
	}
	return err
}

func (t *publishTarget) openStore() (*publish.Store, error) {
	s, err := publish.OpenStore(filepath.Join(t.stateDir, publish.DBFile))
	if err != nil {
		return nil, fmt.Errorf("release store: %w", err)
	}
	return s, nil
}

// gate opens everything a gate needs; close releases it.
func (t *publishTarget) gate(opts publish.Options, observer func(publish.Event)) (g *publish.Gate, store *publish.Store, closeAll func(), err error) {
	p, closeP, err := t.openPlatform()
	if err != nil {
		return nil, nil, nil, err
	}
	router, err := target.Router(t.options())
	if err != nil {
		closeP()
		return nil, nil, nil, targetErr(err)
	}
	store, err = t.openStore()
	if err != nil {
		closeP()
		return nil, nil, nil, err
	}
	g, err = publish.NewGate(publish.GateConfig{Platform: p, Store: store, Router: router, Options: opts,
		LockDir: t.stateDir, Observer: observer})
	if err != nil {
		store.Close()
		closeP()
		if errors.Is(err, publish.ErrInvalid) {
			return nil, nil, nil, usagef("%v", err)
		}
		return nil, nil, nil, err
	}
	return g, store, func() { store.Close(); closeP() }, nil
}

// checkAppFlag returns a usage error (exit 2) unless app is a valid app name,
// so bad input is refused before any platform or store is opened.
func checkAppFlag(app string) error {
	if err := publish.ValidateAppName(app); err != nil {
		return usagef("%s", strings.TrimPrefix(err.Error(), publish.ErrInvalid.Error()+": "))
	}
	return nil
}

// timingFlags are the gate's look delays.
type timingFlags struct {
	look, poll, stable, window, restore, call, startPeriod, loopWindow time.Duration
	unhealthy                                                          int
}

func (f *timingFlags) addFlags(fs *pflag.FlagSet) {
	d := publish.DefaultOptions
	fs.DurationVar(&f.look, "look-interval", d.LookInterval, "delay between looks once the machines read started (look 2 after look 1, look 3 after look 2)")
	fs.DurationVar(&f.poll, "poll-interval", d.PollInterval, "delay between looks while a machine has not read started yet")
	fs.DurationVar(&f.stable, "stable-for", d.StableFor, "how long a machine must stay up after its latest start or crash to be live")
	fs.DurationVar(&f.window, "window", d.Window, "longest the judgement may take; at its end, never started or never healthy is failed, missing evidence unknown")
	fs.DurationVar(&f.restore, "restore-timeout", d.RestoreTimeout, "longest a rollback may take to get the restored machines healthy")
	fs.DurationVar(&f.call, "call-timeout", d.CallTimeout, "longest one platform API call may take; an update that does not answer in time is judged by what the machines run once they settle, never failed for it")
	fs.DurationVar(&f.startPeriod, "start-period", d.StartPeriod, "after a machine is first seen started, how long its wrong health answers do not count")
	fs.IntVar(&f.unhealthy, "unhealthy-threshold", d.UnhealthyThreshold, "wrong health answers (a status outside 2xx other than 502/503/504) in a row, after the start period, that fail a started machine; 0 waits for --window")
	fs.DurationVar(&f.loopWindow, "loop-window", d.LoopWindow, "a crash less than this after the previous one (platform clock) is a crash loop; at least --stable-for")
}

func (f *timingFlags) options() (publish.Options, error) {
	o := publish.Options{LookInterval: f.look, PollInterval: f.poll, StableFor: f.stable, Window: f.window, RestoreTimeout: f.restore, CallTimeout: f.call,
		StartPeriod: f.startPeriod, UnhealthyThreshold: f.unhealthy, LoopWindow: f.loopWindow}
	if f.startPeriod < 0 {
		return o, usagef("--start-period %s: give 0 or a positive duration", f.startPeriod)
	}
	if f.startPeriod == 0 {
		o.StartPeriod = -1
	}
	if f.unhealthy < 0 {
		return o, usagef("--unhealthy-threshold %d: give 0 (wait for --window) or more", f.unhealthy)
	}
	if f.unhealthy == 0 {
		o.UnhealthyThreshold = -1
	}
	for name, v := range map[string]time.Duration{"--look-interval": f.look, "--poll-interval": f.poll, "--window": f.window, "--restore-timeout": f.restore, "--call-timeout": f.call, "--loop-window": f.loopWindow} {
		if v <= 0 {
			return o, usagef("%s %s: give a positive duration such as 5s", name, v)
		}
	}
	if f.stable < 0 {
		return o, usagef("--stable-for %s: give 0 or a positive duration", f.stable)
	}
	if f.stable == 0 {
		o.StableFor = -1 // no minimum beyond looking twice
	}
	if err := o.Validate(); err != nil {
		return o, usagef("%v", err)
	}
	return o, nil
}

func newPublishCmd() *cobra.Command {
	var (
		target        publishTarget
		tf            timingFlags
		app, image    string
		env, args     []string
		policy        string
		maxRetries    int
		port          int
		machines      int
		strategy      string
		healthPath    string
		healthURL     string
		asJSON        bool
		noRollback    bool
		quietProgress bool
	)
	cmd := &cobra.Command{
		Use:   "publish --app NAME --image REF [flags]",
		Short: "Publish a release onto a machines platform and judge it: live, or failed and rolled back",
		Long: `publish moves an app's machines to a new release and judges it
(docs/publish.md). With --lb-admin the previous release keeps serving until
the new one is live (blue-green); without it the machines are updated in
place, and a failing release costs the time it takes to roll back.

The verdict:

  look twice      when a machine reads started, wait and look again
  crash loop      fail when the platform stopped restarting a machine
  latest crash    if a look shows a crash since the publish began, look again;
                  a later latest-crash timestamp (or a grown restart count, or a
                  new start of the same instance), or two crashes in one look's
                  list, closer than --loop-window, means it is still
                  restarting: fail. Two crashes further apart are a warning.
                  Never counts events: platforms keep only a few per machine.
  health          the app's own HTTP health check must pass; a machine that
                  answers it wrongly (500, 404: not 502/503/504, which say "not
                  ready") --unhealthy-threshold looks in a row after its
                  --start-period is failed (about 20 s at the defaults)
  stable          live only after --stable-for of uptime since the latest crash,
                  counted between our own looks (a skewed platform clock cannot
                  stretch it); crashes are compared with each other and with
                  the publish's own update event, on the platform's clock
  control plane   API errors alone give unknown and a direct probe — no rollback;
                  a machine still on the old release after an unanswered or
                  refused update is "not yet", never failed

Strategies (--strategy) and what they cost:

  bluegreen  the default with --lb-admin. New machines start beside the serving
             ones; the load balancer routes to them only once the release is
             live. On Fly without --lb-admin, Fly Proxy is the load balancer:
             new machines are created with skip_service_registration, judged by
             their own Fly checks (configure some), then uncordoned. A failing
             release never serves a request. Costs: twice the machines while
             judging, and the previous release's machines are kept stopped for
             a fast restore.
  inplace    the default without a load balancer. The app's machines are
             updated to the release. No extra machines, but a failing release
             serves users while it is judged and until the rollback completes
             (a crash loop at boot failed 16 of 63 requests in one measurement;
             blue-green failed none).

Interrupting: the first Ctrl-C (or SIGTERM) finishes quickly and safely —
in place, the last good release is restored; blue-green, the new machines are
removed — and records the release as interrupted (exit 3). A second signal
stops at once and prints what was left and the command that repairs it
(` + "`mythex publish reconcile`" + `).

A failed release rolls back to the last known good release (not simply the
previous one), restoring it — nothing of it is deleted, no image is removed —
and the message says which machine crashed how often and that it is still
restarting. With --lb-admin the publish is blue-green: new machines start
beside the serving ones and the load balancer routes to them only once the
release is live; a failed release never touches the serving machines.

Exit status: 0 live, 1 failed (and rolled back), 2 bad input (nothing
changed; an image that does not exist is found before any machine changes),
3 unknown (nothing rolled back; ` + "`mythex publish reconcile`" + ` decides later) or
interrupted.`,
		Example: `  # the local platform: run its daemon once, then publish the sample app
  mythex publish local-platform --state-dir .mythex &
  mythex publish --app api --image "$(command -v mythex)" --arg sample-app \
      --env MYTHEX_APP_VERSION=v1

  # a release that crashes at startup: failed, v1 restored, exit 1
  mythex publish --app api --image "$(command -v mythex)" --arg sample-app \
      --env MYTHEX_APP_VERSION=v2 --env MYTHEX_APP_CRASH_ON_START=500ms

  # on Fly, judged through the Machines API and the app's public health URL
  # (needs a Machines API token: without one it stops at once, exit 2)
  FLY_API_TOKEN=... mythex publish --platform fly --app api \
      --image registry.fly.io/api:deployment-01H --port 8080

  # on Docker, behind mythex lb, blue-green, verdict as JSON
  mythex publish --platform docker --app api --image api:v2 --port 8080 \
      --lb-admin http://127.0.0.1:8079 --json | jq .status

  # see the releases, and re-check live ones every 30 s
  mythex publish history --app api
  mythex publish reconcile --every 30s`,
		Args: func(_ *cobra.Command, a []string) error {
			if len(a) > 0 {
				return usagef("publish takes no arguments (got %q); the release is --image with --arg/--env", a[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if app == "" || image == "" {
				return usagef("publish needs --app NAME and --image REF (on the local platform, the executable's path)")
			}
			if err := checkAppFlag(app); err != nil {
				return err
			}
			cfg, err := releaseConfig(image, env, args, policy, maxRetries, port, cmd.Flags().Changed("max-retries"))
			if err != nil {
				return err
			}
			opts, err := tf.options()
			if err != nil {
				return err
			}
			if target.platform == "fly" && healthURL == "" {
				healthURL = "https://" + app + ".fly.dev" + healthPath
			}
			progress := termui.PublishProgress(cmd.ErrOrStderr(), quietProgress)
			target.strategy, target.app = strategy, app
			g, _, closeAll, err := target.gate(opts, progress)
			if err != nil {
				return err
			}
			defer closeAll()
			strat := publish.Strategy(strategy)
			if strategy == "auto" {
				strat = ""
			}
			abort, stopSignals := publish.SecondSignal(cmd.Context())
			defer stopSignals()
			res, err := g.Publish(cmd.Context(), publish.Request{App: app, Config: cfg, Machines: machines,
				Strategy: strat, Health: publish.Health{Path: healthPath, AppURL: healthURL},
				NoRollback: noRollback, Abort: abort})
			if err != nil {
				return publishErr(err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := termui.WritePublishJSON(out, res); err != nil {
					return err
				}
			} else {
				termui.WritePublishText(out, res)
			}
			switch res.Verdict.Status {
			case publish.StatusLive:
				return nil
			case publish.StatusFailed:
				return silentExit(exitFailed)
			default:
				return silentExit(exitUnknown)
			}
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&app, "app", "", "app name: lower-case letters, digits and dashes (required)")
	fs.StringVar(&image, "image", "", "image reference (fly, docker) or executable path (local) of the release (required)")
	fs.StringArrayVar(&env, "env", nil, "KEY=VALUE in the release's environment (repeatable)")
	fs.StringArrayVar(&args, "arg", nil, "argument after the image's entrypoint (repeatable; passed as argv, never through a shell)")
	fs.StringVar(&policy, "restart-policy", "on-failure", "what the platform does when the app exits: no, always, on-failure")
	fs.IntVar(&maxRetries, "max-retries", platform.DefaultMaxRetries, "restarts allowed under on-failure")
	fs.IntVar(&port, "port", 0, "port the app listens on inside the machine (docker, fly); the local platform gives each machine its own")
	fs.IntVar(&machines, "machines", 1, "machines to create when the app has none serving")
	fs.StringVar(&strategy, "strategy", "auto", "bluegreen (needs --lb-admin; a failing release serves nobody, twice the machines while judging), inplace (no extra machines; a failing release serves users until rolled back), or auto: bluegreen when there is a load balancer")
	fs.StringVar(&healthPath, "health-path", "/healthz", "the app's health endpoint on each machine")
	fs.StringVar(&healthURL, "health-url", "", "the app's own health URL, used for machines without a reachable address (default on fly: https://APP.fly.dev<health-path>)")
	fs.BoolVar(&asJSON, "json", false, "print the verdict as JSON on stdout")
	fs.BoolVar(&noRollback, "no-rollback", false, "on failure, leave the release in place (for releases that migrated state the old version cannot read)")
	fs.BoolVar(&quietProgress, "quiet", false, "no progress lines (they go to stderr when it is a terminal)")
	target.addFlags(fs, true)
	tf.addFlags(fs)
	cmd.AddCommand(newPublishHistoryCmd(), newPublishReconcileCmd(), newPublishLocalPlatformCmd(), newPublishSleepCmd())
	return cmd
}

// releaseConfig builds and validates the release's config from flags.
func releaseConfig(image string, env, args []string, policy string, maxRetries, port int, retriesSet bool) (platform.Config, error) {
	cfg := platform.Config{Image: image, Args: args, Port: port, Restart: platform.Restart{Policy: platform.RestartPolicy(policy)}}
	if cfg.Restart.Policy == platform.RestartOnFailure {
		cfg.Restart.MaxRetries = maxRetries
	} else if retriesSet {
		return cfg, usagef("--max-retries applies only to --restart-policy on-failure (got %s)", policy)
	}
	var err error
	if cfg.Env, err = keyValues("--env", env); err != nil {
		return cfg, err
	}
	if maxRetries < 0 {
		return cfg, usagef("--max-retries %d: give 0 or more", maxRetries)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usagef("%v", strings.TrimPrefix(err.Error(), "invalid: "))
	}
	return cfg, nil
}

// publishErr maps the gate's errors to exit codes: bad input 2; a platform or
// load balancer that did not answer (nothing changed), or a locked app, 3.
func publishErr(err error) error {
	switch {
	case errors.Is(err, publish.ErrAborted):
		return withCode(exitUnknown, err)
	case errors.Is(err, publish.ErrInterrupted):
		return withCode(exitUnknown, fmt.Errorf("%w; `mythex publish history` shows it as interrupted", err))
	case errors.Is(err, publish.ErrInvalid):
		return usagef("%v", err)
	case errors.Is(err, publish.ErrBusy):
		return withCode(exitUnknown, err)
	case platform.IsControlPlane(err):
		return withCode(exitUnknown, fmt.Errorf("unknown: the platform did not answer (%w); nothing was changed", err))
	case errors.Is(err, publish.ErrRouter):
		return withCode(exitUnknown, fmt.Errorf("unknown: the load balancer could not be driven (%w); the serving release was not touched", err))
	}
	return err
}

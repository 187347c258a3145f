package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mythex/mythex/internal/auth"
	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/embedded"
	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/platform/docker"
	"github.com/mythex/mythex/internal/platform/fly"
	"github.com/mythex/mythex/internal/platform/local"
	"github.com/mythex/mythex/internal/publish"
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

// openPlatform builds the platform the flags name. A missing local platform
// daemon or credential is a usage error: nothing was changed.
func (t *publishTarget) openPlatform() (platform.Platform, func(), error) {
	switch t.platform {
	case "local":
		url, token, err := t.localEndpoint()
		if err != nil {
			return nil, nil, err
		}
		// The daemon runs on this host (loopback only): its images are
		// executables here, checked before any machine changes.
		c, err := fly.New(fly.Options{BaseURL: url, Token: token, PrivateAddresses: true, Name: "local", Retries: 1,
			CheckImage: func(_ context.Context, image string) error { return local.CheckImage(image) }})
		if err != nil {
			return nil, nil, usagef("local platform: %v", err)
		}
		return c, func() {}, nil
	case "fly":
		c, err := fly.New(fly.Options{BaseURL: t.flyURL, Token: t.flyToken})
		if err != nil {
			return nil, nil, usagef("--platform fly: %v", err)
		}
		return c, func() {}, nil
	case "docker":
		p, err := docker.New(docker.Options{})
		if err != nil {
			return nil, nil, fmt.Errorf("--platform docker: %w", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Ping(ctx); err != nil {
			p.Close()
			return nil, nil, withCode(exitUnknown, fmt.Errorf("--platform docker: %w (is dockerd running? DOCKER_HOST?)", err))
		}
		return p, func() { p.Close() }, nil
	}
	return nil, nil, usagef("--platform %q: use local, fly or docker", t.platform)
}

// localEndpoint finds the local platform daemon's URL and token.
func (t *publishTarget) localEndpoint() (string, string, error) {
	info, err := readLocalPlatformInfo(t.stateDir)
	if t.localAPI != "" {
		if err != nil {
			return "", "", usagef("--local-api %s: no token: %v", t.localAPI, err)
		}
		return t.localAPI, info.token, nil
	}
	if err != nil {
		return "", "", usagef("the local platform is not running for state dir %s (%v): start it with `mythex publish local-platform --state-dir %s`, or pick --platform fly|docker",
			t.stateDir, err, t.stateDir)
	}
	return info.URL, info.token, nil
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
	router, err := t.router()
	if err != nil {
		closeP()
		return nil, nil, nil, err
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

// router returns the load balancer the publish drives, or nil (in place).
// On Fly with --strategy bluegreen and no --lb-admin it is Fly Proxy itself.
func (t *publishTarget) router() (lbport.Driver, error) {
	if t.lbAdmin == "" && t.platform == "fly" && t.strategy == string(publish.StrategyBlueGreen) {
		c, err := fly.New(fly.Options{BaseURL: t.flyURL, Token: t.flyToken})
		if err != nil {
			return nil, usagef("--platform fly: %v", err)
		}
		return flyProxyRouter{c: c, app: t.app}, nil
	}
	if t.lbAdmin == "" {
		return nil, nil
	}
	token, err := auth.LoadToken(t.lbTokenFile, lbTokenEnv)
	if err != nil {
		return nil, usagef("--lb-admin %s: %v", t.lbAdmin, err)
	}
	return embedded.New(lbapi.NewClient(t.lbAdmin, token, nil)), nil
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
			progress := progressWriter(cmd.ErrOrStderr(), quietProgress)
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
			abort, stopSignals := secondSignal(cmd.Context())
			defer stopSignals()
			res, err := g.Publish(cmd.Context(), publish.Request{App: app, Config: cfg, Machines: machines,
				Strategy: strat, Health: publish.Health{Path: healthPath, AppURL: healthURL},
				NoRollback: noRollback, Abort: abort})
			if err != nil {
				return publishErr(err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeResultJSON(out, res); err != nil {
					return err
				}
			} else {
				writeResultText(out, res)
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
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return cfg, usagef("--env %q: give KEY=VALUE", kv)
		}
		if cfg.Env == nil {
			cfg.Env = map[string]string{}
		}
		cfg.Env[k] = v
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

// secondSignal returns a channel closed on the second SIGINT/SIGTERM of a
// publish: the first one ends ctx (the root command's signal context) and
// the gate finishes safely; the second closes the channel and the gate stops
// at once. stop unregisters.
func secondSignal(ctx context.Context) (<-chan struct{}, func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	abort := make(chan struct{})
	done := make(chan struct{})
	go func() {
		n := 0
		if ctx.Err() != nil {
			n = 1 // the first signal already ended ctx
		}
		for {
			select {
			case <-ch:
				n++
				if n >= 2 {
					close(abort)
					return
				}
			case <-done:
				return
			}
		}
	}()
	return abort, func() { signal.Stop(ch); close(done) }
}

// progressWriter prints one line per look and per step to w when w is a
// terminal (and not quiet).
func progressWriter(w io.Writer, quiet bool) func(publish.Event) {
	f, ok := w.(*os.File)
	if quiet || !ok || !isatty.IsTerminal(f.Fd()) {
		return nil
	}
	return func(e publish.Event) { fmt.Fprintln(w, progressLine(e)) }
}

// progressLine renders one progress event.
func progressLine(e publish.Event) string {
	el := fmt.Sprintf("+%5.1fs", e.Elapsed.Seconds())
	if e.Kind == publish.EventStep {
		return fmt.Sprintf("%s  %s", el, e.Message)
	}
	var parts []string
	for i, ms := range e.Verdict.Machines {
		s := fmt.Sprintf("%s %s", ms.ID, orDash(string(ms.State)))
		if i < len(e.Look.Machines) && e.Look.Machines[i].Err != "" {
			s = fmt.Sprintf("%s (platform: %s)", ms.ID, e.Look.Machines[i].Err)
		}
		if ms.CrashesSeen > 0 {
			s += fmt.Sprintf(", crashed %d× since publish (latest: %s at %s)", ms.CrashesSeen, ms.LatestExit(), ms.LatestCrash.UTC().Format("15:04:05.000"))
		}
		if ms.RestartCount > 0 {
			s += fmt.Sprintf(", restarts %d", ms.RestartCount)
		}
		if i < len(e.Look.Machines) {
			p := e.Look.Machines[i].Probe
			if !p.Ran {
				p = e.Look.App
			}
			if p.Ran {
				s += ", health " + p.String()
			}
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%s  look %d  %-7s %s", el, e.Look.N, e.Verdict.Status, strings.Join(parts, "; "))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// resultJSON is the --json shape of a publish.
type resultJSON struct {
	App           string           `json:"app"`
	Release       string           `json:"release"`
	Image         string           `json:"image"`
	Status        publish.Status   `json:"status"`
	ReleaseStatus string           `json:"release_status"`
	Reasons       []string         `json:"reasons"`
	Warnings      []string         `json:"warnings"`
	Machines      []machineJSON    `json:"machines"`
	Looks         int              `json:"looks"`
	Elapsed       float64          `json:"elapsed_seconds"`
	LastGood      string           `json:"last_good,omitempty"`
	Rollback      *rollbackJSON    `json:"rollback,omitempty"`
	Platform      string           `json:"platform"`
	Strategy      publish.Strategy `json:"strategy"`
}

type machineJSON struct {
	publish.MachineSummary
	UpForSeconds float64 `json:"up_for_seconds"`
}

type rollbackJSON struct {
	From        string   `json:"from"`
	To          string   `json:"to,omitempty"`
	TookSeconds float64  `json:"took_seconds"`
	Machines    []string `json:"machines,omitempty"`
	Error       string   `json:"error,omitempty"`
}

func toResultJSON(res publish.Result) resultJSON {
	r := res.Release
	out := resultJSON{App: r.App, Release: r.ID, Image: r.Config.Image, Status: res.Verdict.Status, ReleaseStatus: string(r.Status),
		Reasons: nonNil(res.Verdict.Reasons), Warnings: nonNil(res.Verdict.Warnings), Looks: res.Verdict.Looks,
		Elapsed: res.Elapsed.Seconds(), LastGood: r.LastGood, Platform: r.Platform, Strategy: r.Strategy, Machines: []machineJSON{}}
	for _, m := range res.Verdict.Machines {
		out.Machines = append(out.Machines, machineJSON{MachineSummary: m, UpForSeconds: m.UpFor.Seconds()})
	}
	if rb := res.Rollback; rb != nil {
		out.Rollback = &rollbackJSON{From: rb.From, To: rb.To, TookSeconds: rb.Took.Seconds(), Machines: rb.Machines, Error: rb.Error}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func writeResultJSON(w io.Writer, res publish.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(toResultJSON(res))
}

// writeResultText prints the verdict for people.
func writeResultText(w io.Writer, res publish.Result) {
	r, v := res.Release, res.Verdict
	switch v.Status {
	case publish.StatusLive:
		fmt.Fprintf(w, "%s of %s is LIVE (image %s, %d looks, %s)\n", r.ID, r.App, r.Config.Image, v.Looks, res.Elapsed.Round(100*time.Millisecond))
	case publish.StatusFailed:
		fmt.Fprintf(w, "%s of %s FAILED (image %s, %d looks, %s)\n", r.ID, r.App, r.Config.Image, v.Looks, res.Elapsed.Round(100*time.Millisecond))
	default:
		fmt.Fprintf(w, "%s of %s: verdict UNKNOWN — nothing was rolled back (image %s, %d looks)\n", r.ID, r.App, r.Config.Image, v.Looks)
	}
	for _, reason := range v.Reasons {
		fmt.Fprintf(w, "  %s\n", reason)
	}
	for _, warn := range v.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
	if rb := res.Rollback; rb != nil {
		switch {
		case rb.Error != "":
			fmt.Fprintf(w, "  rollback to %s did not complete after %s: %s\n", rb.To, rb.Took.Round(time.Millisecond), rb.Error)
		case rb.To != "":
			fmt.Fprintf(w, "  rolled back to the last good release %s in %s; it serves (machines %s)\n", rb.To, rb.Took.Round(time.Millisecond), strings.Join(rb.Machines, ", "))
		}
	}
	if v.Status == publish.StatusFailed && res.Rollback == nil && r.Status == publish.ReleaseFailed {
		fmt.Fprintf(w, "  not rolled back: %s\n", lastClause(r.Reason))
	}
	if v.Status == publish.StatusUnknown {
		fmt.Fprintf(w, "  %s stays pending; `mythex publish reconcile` finishes it once the platform answers\n", r.ID)
	}
}

func lastClause(s string) string {
	parts := strings.Split(s, "; ")
	return parts[len(parts)-1]
}

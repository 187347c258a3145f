package docker

// Healthcheck start_interval on engines that lack it.
//
// Docker 25 (Engine API 1.44) added healthcheck.start_interval: during
// start_period the engine runs the check every start_interval instead of
// every interval; the first success makes the container healthy (and ends
// the start period); failures during the start period do not count toward
// retries. Older engines refuse the field, so buildSpec drops it and their
// first check runs one full interval after the container starts: a service
// that answers in 100ms still reads "starting" for the whole interval (5s in
// the examples), and every deploy waits for it.
//
// On such engines the runtime runs the start-interval checks itself, after
// each Start that starts a container: the healthcheck's exec-form test
// inside the container through the Engine API's exec endpoints (no shell,
// no docker CLI), as Docker's own check runs it, until the first success.
// Status reports that run healthy while Docker still says "starting", and
// the checks join the health log. Once Docker's own checks have a result
// (healthy or unhealthy), Docker's state alone counts.

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/versions"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

// startIntervalAPI is the first Engine API version whose healthcheck has
// StartInterval (Docker 25).
const startIntervalAPI = "1.44"

// execExitPoll is how often a check asks the engine for the exit code of an
// exec whose output has ended but whose exit the engine has not recorded yet.
const execExitPoll = 5 * time.Millisecond

// needsStartInterval reports whether the runtime must run h's checks at its
// start_interval itself: h has an exec test, a start period and a start
// interval (both > 0) shorter than its interval (else Docker's own checks
// come as often), and the engine speaks an API (apiVersion) older than 1.44.
func needsStartInterval(h *definition.Healthcheck, apiVersion string) bool {
	return h != nil && len(h.Test) > 0 && h.StartPeriod > 0 && h.StartInterval > 0 &&
		h.StartInterval < h.Interval && versions.LessThan(apiVersion, startIntervalAPI)
}

// runKey is one run of one container: its ID and Docker's State.StartedAt
// of the run (starting the same container again is another run).
type runKey struct{ id, startedAt string }

// startRun is what the runtime's start-interval checks found in one run.
type startRun struct {
	// interval is the healthcheck's start_interval.
	interval time.Duration
	// passed: a check passed; the run is healthy.
	passed bool
	// log holds the latest runtime.MaxHealthLog results, oldest first.
	log []runtime.CheckResult
}

// startChecks runs the start-interval checks of the containers a runtime
// starts, on one goroutine per container run, and keeps their results by
// run. close ends the goroutines and waits for them. Safe for concurrent use.
type startChecks struct {
	cli   client.APIClient
	clock clockwork.Clock
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	runs   map[runKey]*startRun
}

// newStartChecks returns the start-interval checks of a runtime using cli,
// clock and log.
func newStartChecks(cli client.APIClient, clock clockwork.Clock, log *slog.Logger) *startChecks {
	ctx, cancel := context.WithCancel(context.Background())
	return &startChecks{cli: cli, clock: clock, log: log, ctx: ctx, cancel: cancel, runs: map[runKey]*startRun{}}
}

// start begins the start-interval checks of the container id, just started
// for service name with healthcheck h: the first one start_interval from
// now, each bounded by h's timeout, the next start_interval after one
// ends, until one passes, the start period (counted from now, on the
// runtime's clock) is over, Docker's own health of the run leaves
// "starting", the container stops or starts again, or close. It does
// nothing after close.
func (sc *startChecks) start(name, id string, h definition.Healthcheck) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		return
	}
	sc.wg.Add(1)
	go sc.run(name, id, h)
}

// close ends every check goroutine and waits until they have returned.
func (sc *startChecks) close() {
	sc.mu.Lock()
	sc.closed = true
	sc.mu.Unlock()
	sc.cancel()
	sc.wg.Wait()
}

func (sc *startChecks) run(name, id string, h definition.Healthcheck) {
	defer sc.wg.Done()
	ctx := sc.ctx
	end := sc.clock.Now().Add(h.StartPeriod)
	c, err := sc.cli.ContainerInspect(ctx, id)
	if err != nil || c.State == nil {
		sc.log.Debug("docker runtime: start_interval checks not begun", "service", name, "id", short(id), "err", err)
		return
	}
	key := runKey{id: id, startedAt: c.State.StartedAt}
	passed := false
	defer func() {
		if !passed { // nothing to report once the checks end
			sc.mu.Lock()
			delete(sc.runs, key)
			sc.mu.Unlock()
		}
	}()
	timer := sc.clock.NewTimer(h.StartInterval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.Chan():
		}
		c, err := sc.cli.ContainerInspect(ctx, id)
		if err != nil || c.State == nil {
			return
		}
		if why := startChecksOver(c.State, key.startedAt, sc.clock.Now(), end); why != "" {
			sc.log.Debug("docker runtime: start_interval checks over", "service", name, "id", short(id), "why", why)
			return
		}
		res := execCheck(ctx, sc.cli, sc.clock, id, h.Test, h.Timeout)
		if ctx.Err() != nil {
			return
		}
		passed = sc.record(key, h.StartInterval, res)
		sc.log.Debug("docker runtime: start_interval check", "service", name, "id", short(id), "ok", res.OK, "exit_code", res.ExitCode, "took", res.End.Sub(res.Start))
		if passed {
			sc.log.Info("docker runtime: healthy at start_interval (checked by the runtime: the engine lacks start_interval)",
				"service", name, "id", short(id), "start_interval", h.StartInterval, "api", sc.cli.ClientVersion())
			return
		}
		timer.Reset(h.StartInterval)
	}
}

// record adds res to the run's results and reports whether the run passed.
func (sc *startChecks) record(key runKey, interval time.Duration, res runtime.CheckResult) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	r := sc.runs[key]
	if r == nil {
		r = &startRun{interval: interval}
		sc.runs[key] = r
	}
	r.log = append(r.log, res)
	if len(r.log) > runtime.MaxHealthLog {
		r.log = slices.Delete(r.log, 0, len(r.log)-runtime.MaxHealthLog)
	}
	r.passed = r.passed || res.OK
	return r.passed
}

// apply overlays on s, the status statusOf made of container c, the
// start-interval results of c's current run (overlayStart), and forgets the
// results that can no longer count: those of c's earlier runs, and those of
// its current run once it stopped or Docker's health left "starting".
func (sc *startChecks) apply(s runtime.ServiceStatus, c container.InspectResponse) runtime.ServiceStatus {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if len(sc.runs) == 0 || c.State == nil {
		return s
	}
	cur := runKey{id: c.ID, startedAt: c.State.StartedAt}
	for k := range sc.runs {
		if k.id == c.ID && k != cur {
			delete(sc.runs, k)
		}
	}
	r := sc.runs[cur]
	if r == nil {
		return s
	}
	if c.State.Status != container.StateRunning || c.State.Health == nil || c.State.Health.Status != container.Starting {
		delete(sc.runs, cur)
		return s
	}
	return overlayStart(s, *r, sc.cli.ClientVersion())
}

// forget drops the results of the containers ids (removed).
func (sc *startChecks) forget(ids ...string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for k := range sc.runs {
		if slices.Contains(ids, k.id) {
			delete(sc.runs, k)
		}
	}
}

// startChecksOver says why the start-interval checks of the run that began
// at Docker's State.StartedAt startedAt end, given the container's state st
// at now, or "" while they go on: the container no longer runs that run
// (it stopped, is restarting, or started again), Docker's own checks have a
// result (its health is no longer "starting"), or the start period ended at
// end.
func startChecksOver(st *container.State, startedAt string, now, end time.Time) string {
	switch {
	case st.Status != container.StateRunning:
		return "the container is " + string(st.Status)
	case st.StartedAt != startedAt:
		return "the container started again"
	case st.Health == nil || st.Health.Status != container.Starting:
		return "Docker's own check has a result"
	case !now.Before(end):
		return "the start period is over"
	}
	return ""
}

// overlayStart is s, Docker's status of a running container whose health
// Docker still reports "starting", with the runtime's start-interval
// results r of its run: r's checks join the log (by start time, the latest
// runtime.MaxHealthLog), and once one passed the health is healthy, with a
// detail saying the runtime ran the check because the engine's API (api)
// lacks start_interval. FailingStreak stays Docker's: failures during the
// start period do not count.
func overlayStart(s runtime.ServiceStatus, r startRun, api string) runtime.ServiceStatus {
	s.Health.Log = append(slices.Clone(s.Health.Log), r.log...)
	slices.SortStableFunc(s.Health.Log, func(a, b runtime.CheckResult) int { return a.Start.Compare(b.Start) })
	if n := len(s.Health.Log); n > runtime.MaxHealthLog {
		s.Health.Log = s.Health.Log[n-runtime.MaxHealthLog:]
	}
	if !r.passed {
		return s
	}
	s.Health.Status = runtime.HealthHealthy
	detail := fmt.Sprintf("healthy: its check passed at start_interval (%v), run by mythex: the engine's API %s lacks start_interval (API %s, Docker 25); Docker's own first check is still to come",
		r.interval, api, startIntervalAPI)
	if s.Detail != "" {
		detail = s.Detail + "; " + detail
	}
	s.Detail = detail
	return s
}

// execCheck runs test (an argv, run without a shell) inside the container id
// through the Engine API's exec endpoints — create, attach (which starts
// it), inspect for the exit code — as Docker runs an exec-form healthcheck:
// the container's user, environment and working directory. It passes on
// exit status 0. A check that takes longer than timeout fails with exit code
// -1 (Docker's "Health check exceeded timeout"); so does one the engine could
// not run, its Output saying why. Output is the start of the command's
// stdout and stderr (runtime.MaxCheckOutput bytes).
func execCheck(ctx context.Context, cli client.APIClient, clock clockwork.Clock, id string, test []string, timeout time.Duration) (res runtime.CheckResult) {
	res = runtime.CheckResult{Start: clock.Now(), ExitCode: -1}
	defer func() { res.End = clock.Now() }()
	ctx, cancel := clockwork.WithTimeout(ctx, clock, timeout)
	defer cancel()
	failed := func(what string, err error) runtime.CheckResult {
		if ctx.Err() != nil {
			res.Output = fmt.Sprintf("Health check exceeded timeout (%v)", timeout)
		} else {
			res.Output = runtime.CapOutput(what + ": " + err.Error())
		}
		return res
	}
	ex, err := cli.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: test, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return failed("exec create", err)
	}
	hj, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return failed("exec attach", err)
	}
	defer hj.Close()
	stop := context.AfterFunc(ctx, hj.Close) // a read does not watch ctx
	defer stop()
	var out runtime.OutputBuffer
	if _, err := stdcopy.StdCopy(&out, &out, hj.Reader); err != nil {
		return failed("exec output", err)
	}
	for {
		ins, err := cli.ContainerExecInspect(ctx, ex.ID)
		if err != nil {
			return failed("exec inspect", err)
		}
		if !ins.Running {
			res.ExitCode, res.OK, res.Output = ins.ExitCode, ins.ExitCode == 0, out.String()
			return res
		}
		select { // the output ended before the engine recorded the exit
		case <-ctx.Done():
			return failed("exec inspect", ctx.Err())
		case <-clock.After(execExitPoll):
		}
	}
}

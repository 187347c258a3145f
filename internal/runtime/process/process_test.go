package process

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime"
)

func TestProcess_StartStop(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	report := tempPath(t, "report.json")
	svc := withHTTPHealth(t, childService(t, "api", "v1", map[string]string{"CHILD_REPORT": report}))
	mustStart(t, p, svc)
	r := readReport(t, report)
	if r.PGID != r.PID {
		t.Errorf("pgid %d != pid %d: the service is not in its own process group", r.PGID, r.PID)
	}
	st := waitStatus(t, p, "api", "healthy", func(s runtime.ServiceStatus) bool { return s.Health.Status == runtime.HealthHealthy })
	if !st.Running() || st.PID != r.PID || st.Version != "v1" || st.SpecHash != svc.SpecHash() || st.ID != "api-"+svc.SpecHash()[:12] {
		t.Errorf("status = %+v", st)
	}
	if err := p.Start(context.Background(), svc); err != nil {
		t.Errorf("Start of the running spec again = %v, want nil (idempotent)", err)
	}

	res := mustStop(t, p, "api", 10*time.Second)
	if !res.WasRunning || res.Killed || res.ExitCode != 0 || res.Signal != "" {
		t.Errorf("stop result = %+v, want SIGTERM honoured, exit 0", res)
	}
	if res.Took >= 10*time.Second {
		t.Errorf("took %v: waited for the grace deadline though SIGTERM was honoured", res.Took)
	}
	st = waitStatus(t, p, "api", "stopped", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateStopped })
	if st.Health.Status != runtime.HealthNone || st.FinishedAt.IsZero() {
		t.Errorf("stopped status = %+v", st)
	}
	log, err := os.ReadFile(p.LogPath("api"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"child ready v1", "got SIGTERM", "started: pid", "stopped: exit code 0"} {
		if !bytes.Contains(log, []byte(want)) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// TestProcess_StopKillsProcessGroup: SIGTERM and SIGKILL reach the whole
// process group, so a grandchild that ignores SIGTERM dies with the service.
func TestProcess_StopKillsProcessGroup(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	gcPID := tempPath(t, "grandchild.pid")
	svc := childService(t, "gateway", "v1", map[string]string{"CHILD_IGNORE_TERM": "1", "CHILD_GRANDCHILD_PID": gcPID})
	mustStart(t, p, svc)
	gc := string(waitFile(t, gcPID))
	grace := 500 * time.Millisecond
	res := mustStop(t, p, "gateway", grace)
	if !res.Killed || res.Signal != "SIGKILL" || res.ExitCode != 128+int(syscall.SIGKILL) {
		t.Errorf("stop result = %+v, want killed by SIGKILL, exit 137", res)
	}
	if res.Took < grace || res.Took > grace+deadline {
		t.Errorf("took %v, want the grace period %v (plus a little)", res.Took, grace)
	}
	var pid int
	for _, c := range gc {
		pid = pid*10 + int(c-'0')
	}
	end := time.Now().Add(deadline)
	for !processGone(pid) && time.Now().Before(end) {
		time.Sleep(20 * time.Millisecond)
	}
	if !processGone(pid) {
		t.Errorf("grandchild %d (ignores SIGTERM) survived: signals must go to the process group", pid)
	}
}

func TestProcess_StopUsesSpecGrace(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	svc := childService(t, "api", "v1", map[string]string{"CHILD_IGNORE_TERM": "1"})
	svc.StopGracePeriod = 300 * time.Millisecond
	mustStart(t, p, svc)
	res := mustStop(t, p, "api", runtime.UseSpecGrace)
	if !res.Killed || res.Took < svc.StopGracePeriod {
		t.Errorf("stop result = %+v, want killed after the spec's %v", res, svc.StopGracePeriod)
	}
}

func TestProcess_KilledFromOutside(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	mustStart(t, p, childService(t, "api", "v1", nil))
	st := waitStatus(t, p, "api", "running", func(s runtime.ServiceStatus) bool { return s.PID > 0 })
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st = waitStatus(t, p, "api", "exited", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateExited })
	if st.ExitCode != 137 || st.Signal != "SIGKILL" {
		t.Errorf("status = %+v, want exited 137 SIGKILL", st)
	}
	res := mustStop(t, p, "api", time.Second)
	if res.WasRunning || res.ExitCode != 137 {
		t.Errorf("Stop of an exited service = %+v, want WasRunning false with its last exit", res)
	}
}

func TestProcess_Environment(t *testing.T) {
	t.Setenv("MYTHEX_LEAK_TEST", "leaked")
	p := newProcess(t, Options{})
	report := tempPath(t, "report.json")
	svc := childService(t, "api", "v3", map[string]string{
		"CHILD_REPORT":       report,
		"MYTHEX_APP_LISTEN":  "127.0.0.1:9111",
		"MYTHEX_APP_SERVICE": "api",
		"SPACED":             "a b  $HOME `x`",
	})
	mustStart(t, p, svc)
	r := readReport(t, report)
	var want []string
	for k, v := range svc.Environment {
		want = append(want, k+"="+v)
	}
	want = append(want, "PATH="+os.Getenv("PATH"))
	// The runtime's marker, to find its services after an agent restart.
	want = append(want, EnvRuntimeDir+"="+p.opts.StateDir, EnvInstance+"="+instanceID(svc.Name, svc.SpecHash()))
	slices.Sort(want)
	got := slices.Clone(r.Env)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("environment = %v\nwant exactly %v", got, want)
	}
	if r.Dir != svc.Process.WorkingDir {
		t.Errorf("working dir = %s, want %s", r.Dir, svc.Process.WorkingDir)
	}
	if !r.FD3 {
		t.Errorf("fd 3 (the log pipe's read end, kept for agent restarts) is missing")
	}
}

func TestProcess_NoShell(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	report := tempPath(t, "report.json")
	svc := childService(t, "api", "v1", map[string]string{"CHILD_REPORT": report})
	args := []string{"$(touch " + marker + ")", "; touch " + marker, "`touch " + marker + "`", "a b", "*", "$HOME"}
	svc.Command = append([]string{childArg}, args...)
	mustStart(t, p, svc)
	r := readReport(t, report)
	if !slices.Equal(r.Args, args) {
		t.Errorf("argv = %q, want exactly %q", r.Args, args)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists: an argument reached a shell", marker)
	}
}

func TestProcess_LogRotation(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{LogMaxSizeMB: 1, LogMaxBackups: 10})
	const total = 2_600_000
	svc := childService(t, "orchestrator", "v1", map[string]string{"CHILD_LOG_BYTES": "2600000", "CHILD_EXIT_AFTER": "50ms"})
	mustStart(t, p, svc)
	waitStatus(t, p, "orchestrator", "exited", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateExited })
	current := p.LogPath("orchestrator")
	rotated, err := filepath.Glob(strings.TrimSuffix(current, ".log") + "-*.log")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rotated) // lumberjack names them by time
	var all []byte
	for _, f := range append(rotated, current) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 1<<20 {
			t.Errorf("%s is %d bytes, over the 1 MB rotation size", f, len(b))
		}
		all = append(all, b...)
	}
	if len(rotated) < 2 {
		t.Errorf("%d rotated files (%v), want at least 2", len(rotated), rotated)
	}
	if lines := bytes.Count(all, []byte(strings.Repeat("x", 99)+"\n")); lines != total/100 {
		t.Errorf("logs hold %d full lines, want %d: output lost or torn", lines, total/100)
	}
}

func TestProcess_RestoreStoppedPreviousVersion(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	v1 := childService(t, "api", "v1", nil)
	v2 := childService(t, "api", "v2", nil)
	v2.Process.WorkingDir = v1.Process.WorkingDir

	mustStart(t, p, v1)
	first := waitStatus(t, p, "api", "running", func(s runtime.ServiceStatus) bool { return s.Running() })
	if err := p.Start(context.Background(), v2); !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("Start v2 while v1 runs = %v, want ErrConflict", err)
	}
	mustStop(t, p, "api", 5*time.Second)
	mustStart(t, p, v2)
	waitStatus(t, p, "api-"+v2.SpecHash()[:12], "running", func(s runtime.ServiceStatus) bool { return s.Running() })

	// The stopped v1 is kept, restorable.
	all, _ := p.Status(context.Background())
	if len(all) != 2 || all[0].Version != "v1" || all[0].State != runtime.StateStopped || all[1].Version != "v2" || !all[1].Running() {
		t.Fatalf("status = %+v, want v1 stopped and v2 running", all)
	}
	if pruned, err := p.Prune(context.Background(), v1.SpecHash()); err != nil || len(pruned) != 0 {
		t.Errorf("Prune keeping v1 = %v, %v; want nothing pruned (v2 runs)", pruned, err)
	}

	// Roll back: stop v2, restart the same v1 instance.
	mustStop(t, p, "api", 5*time.Second)
	mustStart(t, p, v1)
	st := waitStatus(t, p, first.ID, "restarted", func(s runtime.ServiceStatus) bool { return s.Running() })
	if st.RestartCount != 1 || st.PID == first.PID {
		t.Errorf("restored v1 = %+v, want the same instance restarted", st)
	}
	pruned, err := p.Prune(context.Background(), v1.SpecHash())
	if err != nil || !slices.Equal(pruned, []string{"api-" + v2.SpecHash()[:12]}) {
		t.Errorf("Prune = %v, %v; want the stopped v2 dropped", pruned, err)
	}
	if _, err := os.Stat(recordPath(p.opts.StateDir, "api-"+v2.SpecHash()[:12])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pruned record still on disk: %v", err)
	}
}

func TestProcess_Health(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	unhealthy := tempPath(t, "unhealthy")
	svc := withHTTPHealth(t, childService(t, "api", "v1", map[string]string{"CHILD_UNHEALTHY_FILE": unhealthy}))
	mustStart(t, p, svc)
	waitStatus(t, p, "api", "healthy", func(s runtime.ServiceStatus) bool { return s.Health.Status == runtime.HealthHealthy })
	if err := os.WriteFile(unhealthy, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(t, p, "api", "unhealthy", func(s runtime.ServiceStatus) bool { return s.Health.Status == runtime.HealthUnhealthy })
	last := st.Health.Log[len(st.Health.Log)-1]
	if st.Health.FailingStreak < 2 || last.OK || last.ExitCode != 503 || !strings.Contains(last.Output, "draining") {
		t.Errorf("unhealthy status = %+v", st.Health)
	}
	if err := os.Remove(unhealthy); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, p, "api", "healthy again", func(s runtime.ServiceStatus) bool { return s.Health.Status == runtime.HealthHealthy })
}

func TestProcess_ExecHealthcheck(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		env        map[string]string
		timeout    time.Duration
		want       runtime.HealthStatus
		wantCode   int
		wantOutput string
	}{
		{"passing command", nil, 5 * time.Second, runtime.HealthHealthy, 0, "check status 200"},
		{"failing command", map[string]string{"CHECK_URL": "http://127.0.0.1:1/healthz"}, 5 * time.Second, runtime.HealthUnhealthy, 1, "check:"},
		{"command over its timeout", map[string]string{"CHECK_SLEEP": "10s"}, 200 * time.Millisecond, runtime.HealthUnhealthy, -1, "timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newProcess(t, Options{})
			svc := withHTTPHealth(t, childService(t, "api", "v1", nil))
			svc.Environment["CHECK_URL"] = "http://" + svc.Environment["CHILD_LISTEN"] + "/healthz"
			for k, v := range tc.env {
				svc.Environment[k] = v
			}
			svc.Process.HealthPath = ""
			svc.Healthcheck.Test = []string{exe, checkArg}
			svc.Healthcheck.Timeout = tc.timeout
			svc.Healthcheck.StartPeriod = 0
			mustStart(t, p, svc)
			st := waitStatus(t, p, "api", string(tc.want), func(s runtime.ServiceStatus) bool { return s.Health.Status == tc.want })
			last := st.Health.Log[len(st.Health.Log)-1]
			if last.ExitCode != tc.wantCode || !strings.Contains(last.Output, tc.wantOutput) {
				t.Errorf("last check = %+v, want exit %d with %q", last, tc.wantCode, tc.wantOutput)
			}
		})
	}
}

func TestProcess_Errors(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	noProc := childService(t, "api", "v1", nil)
	noProc.Process = nil
	if err := p.Start(context.Background(), noProc); !errors.Is(err, runtime.ErrUnsupported) {
		t.Errorf("Start without x-mythex = %v, want ErrUnsupported", err)
	}
	missing := childService(t, "api", "v1", nil)
	missing.Process.Executable = filepath.Join(t.TempDir(), "no-such-app")
	err := p.Start(context.Background(), missing)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "x-mythex.executable") {
		t.Errorf("Start of a missing executable = %v, want ErrNotExist naming x-mythex.executable", err)
	}
	noDir := childService(t, "api", "v1", nil)
	noDir.Process.WorkingDir = filepath.Join(t.TempDir(), "gone")
	if err := p.Start(context.Background(), noDir); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "x-mythex.working_dir") {
		t.Errorf("Start in a missing working dir = %v, want ErrNotExist naming x-mythex.working_dir", err)
	}
	noCheck := childService(t, "api", "v1", nil)
	noCheck.Healthcheck = &definition.Healthcheck{Interval: time.Second, Timeout: time.Second, Retries: 1, StartInterval: time.Second}
	if err := p.Start(context.Background(), noCheck); !errors.Is(err, definition.ErrInvalid) || !strings.Contains(err.Error(), "healthcheck.test") {
		t.Errorf("Start with a healthcheck that cannot run = %v, want ErrInvalid naming healthcheck.test", err)
	}
	if _, err := p.Stop(context.Background(), "nobody", time.Second); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Stop of an unknown service = %v, want ErrNotFound", err)
	}
	if st, _ := p.Status(context.Background()); len(st) != 0 {
		t.Errorf("failed starts left instances: %+v", st)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background(), childService(t, "api", "v1", nil)); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
}

func TestProcess_ConcurrentStopsShareOneStop(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	mustStart(t, p, childService(t, "api", "v1", map[string]string{"CHILD_IGNORE_TERM": "1"}))
	waitStatus(t, p, "api", "running", func(s runtime.ServiceStatus) bool { return s.PID > 0 })
	var wg sync.WaitGroup
	results := make([]runtime.StopResult, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := p.Stop(context.Background(), "api", 300*time.Millisecond)
			if err != nil {
				t.Errorf("Stop: %v", err)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	for _, r := range results {
		if !r.Killed {
			t.Errorf("result %+v, want every caller to see the one kill", r)
		}
	}
}

func TestProcess_StopContextEnds(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	mustStart(t, p, childService(t, "api", "v1", map[string]string{"CHILD_IGNORE_TERM": "1"}))
	waitStatus(t, p, "api", "running", func(s runtime.ServiceStatus) bool { return s.PID > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := p.Stop(ctx, "api", time.Second)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v, want DeadlineExceeded", err)
	}
	// The stop carries on and kills it at the grace deadline.
	st := waitStatus(t, p, "api", "stopped", func(s runtime.ServiceStatus) bool { return s.State == runtime.StateStopped })
	if st.Signal != "SIGKILL" {
		t.Errorf("status = %+v, want killed at the deadline", st)
	}
}

func TestProcess_StartWhileStoppingConflicts(t *testing.T) {
	t.Parallel()
	p := newProcess(t, Options{})
	svc := childService(t, "api", "v1", map[string]string{"CHILD_TERM_DELAY": "2s"})
	mustStart(t, p, svc)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := p.Stop(context.Background(), "api", 10*time.Second); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	end := time.Now().Add(deadline)
	for {
		err := p.Start(context.Background(), svc)
		if errors.Is(err, runtime.ErrConflict) && strings.Contains(err.Error(), "stopping") {
			break
		}
		if err != nil || time.Now().After(end) {
			t.Fatalf("Start while stopping = %v, want ErrConflict (is stopping)", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	<-done
	mustStart(t, p, svc)
}

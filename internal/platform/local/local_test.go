package local

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/testbin"
	"github.com/mythex/mythex/internal/testkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	testkit.Exit(code)
}

// testApp builds testdata/testapp once.
func testApp(t *testing.T) string {
	t.Helper()
	bin, err := testbin.Build("./testdata/testapp")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func newSupervisor(t *testing.T, opts Options) *Supervisor {
	t.Helper()
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = 2 * time.Second
	}
	if opts.RestartDelay == 0 {
		opts.RestartDelay = 50 * time.Millisecond
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitFor polls cond every 20ms until it holds or 15s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func get(t *testing.T, s *Supervisor, id string) platform.Machine {
	t.Helper()
	m, err := s.Get(context.Background(), "api", id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func health(addr string) (string, error) {
	c := &http.Client{Timeout: 300 * time.Millisecond}
	resp, err := c.Get("http://" + addr + "/healthz")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), nil
}

func cfg(t *testing.T, policy platform.RestartPolicy, env map[string]string) platform.Config {
	return platform.Config{Image: testApp(t), Env: env, Restart: platform.Restart{Policy: policy}}
}

func TestSupervisor_CreateServes(t *testing.T) {
	s := newSupervisor(t, Options{})
	ctx := context.Background()
	m, err := s.Create(ctx, "api", cfg(t, platform.RestartAlways, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(ctx, "api", m.ID, platform.StateStarted, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var body string
	waitFor(t, "the machine to answer", func() bool { body, err = health(m.Address); return err == nil })
	if body != "ok "+m.ID {
		t.Errorf("health body = %q, want the machine id passed in the environment", body)
	}
	got := get(t, s, m.ID)
	if len(got.Events) != 2 || got.Events[0].Type != platform.EventStart || got.Events[1].Type != platform.EventLaunch {
		t.Errorf("events = %+v, want start, launch (newest first)", got.Events)
	}
	if !got.HasRestartCount || got.RestartCount != 0 || got.StartedAt.IsZero() || got.InstanceID == "" {
		t.Errorf("machine = %+v", got)
	}
	list, _ := s.List(ctx, "api")
	if len(list) != 1 || list[0].ID != m.ID {
		t.Errorf("List = %+v", list)
	}
	if other, _ := s.List(ctx, "web"); len(other) != 0 {
		t.Errorf("List(web) = %+v, want none", other)
	}
}

func TestSupervisor_RestartPolicies(t *testing.T) {
	crash := func(code string) map[string]string {
		return map[string]string{"TESTAPP_CRASH_AFTER": "100ms", "TESTAPP_EXIT_CODE": code}
	}
	tests := []struct {
		name        string
		restart     platform.Restart
		env         map[string]string
		wantRC      int  // restart count once settled (or at least, for always)
		keepsGoing  bool // always: it never settles
		wantCode    int
		wantRestart bool // the newest exit's restarting flag once settled
	}{
		{"always restarts a crash, forever", platform.Restart{Policy: platform.RestartAlways}, crash("1"), 4, true, 1, true},
		{"always restarts a clean exit too", platform.Restart{Policy: platform.RestartAlways}, crash("0"), 3, true, 0, true},
		{"on-failure stops after max_retries", platform.Restart{Policy: platform.RestartOnFailure, MaxRetries: 2}, crash("3"), 2, false, 3, false},
		{"on-failure does not restart a clean exit", platform.Restart{Policy: platform.RestartOnFailure, MaxRetries: 5}, crash("0"), 0, false, 0, false},
		{"no never restarts", platform.Restart{Policy: platform.RestartNo}, crash("2"), 0, false, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSupervisor(t, Options{})
			c := cfg(t, "", tt.env)
			c.Restart = tt.restart
			m, err := s.Create(context.Background(), "api", c)
			if err != nil {
				t.Fatal(err)
			}
			if tt.keepsGoing {
				waitFor(t, "restarts", func() bool { return get(t, s, m.ID).RestartCount >= tt.wantRC })
			} else {
				waitFor(t, "the machine to stop", func() bool { return get(t, s, m.ID).State == platform.StateStopped })
			}
			got := get(t, s, m.ID)
			if len(got.Events) > 5 {
				t.Errorf("%d events kept, want at most 5", len(got.Events))
			}
			var exit *platform.Event
			for i := range got.Events {
				if got.Events[i].Type == platform.EventExit {
					exit = &got.Events[i]
					break
				}
			}
			if exit == nil {
				t.Fatalf("no exit event in %+v", got.Events)
			}
			if exit.Exit.ExitCode != tt.wantCode || exit.Exit.RequestedStop {
				t.Errorf("newest exit = %+v, want code %d, not requested", exit.Exit, tt.wantCode)
			}
			if !tt.keepsGoing {
				if got.RestartCount != tt.wantRC || exit.Exit.Restarting != tt.wantRestart || exit.RestartCount != tt.wantRC {
					t.Errorf("settled: restart count %d, newest exit %+v rc %d; want %d, restarting=%v", got.RestartCount, exit.Exit, exit.RestartCount, tt.wantRC, tt.wantRestart)
				}
			} else if !exit.Exit.Restarting {
				t.Errorf("newest exit under always = %+v, want restarting", exit.Exit)
			}
			for i := 1; i < len(got.Events); i++ {
				if got.Events[i].Timestamp.After(got.Events[i-1].Timestamp) {
					t.Errorf("events not newest first: %v after %v", got.Events[i].Timestamp, got.Events[i-1].Timestamp)
				}
			}
		})
	}
}

func TestSupervisor_MaxEvents(t *testing.T) {
	s := newSupervisor(t, Options{MaxEvents: 3})
	m, _ := s.Create(context.Background(), "api", cfg(t, platform.RestartAlways, map[string]string{"TESTAPP_CRASH_AFTER": "50ms"}))
	waitFor(t, "restarts", func() bool { return get(t, s, m.ID).RestartCount >= 4 })
	if n := len(get(t, s, m.ID).Events); n != 3 {
		t.Errorf("%d events kept, want 3", n)
	}
}

func TestSupervisor_StopIsRequested(t *testing.T) {
	for _, tt := range []struct {
		name       string
		env        map[string]string
		wantSignal int
		wantCode   int
	}{
		{"SIGTERM", nil, 0, 143},
		{"SIGKILL after the stop timeout", map[string]string{"TESTAPP_IGNORE_TERM": "1"}, 9, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSupervisor(t, Options{StopTimeout: 300 * time.Millisecond})
			ctx := context.Background()
			m, _ := s.Create(ctx, "api", cfg(t, platform.RestartAlways, tt.env))
			waitFor(t, "serving", func() bool { _, err := health(m.Address); return err == nil })
			if err := s.Stop(ctx, "api", m.ID); err != nil {
				t.Fatal(err)
			}
			got := get(t, s, m.ID)
			x := got.Events[0]
			if got.State != platform.StateStopped || x.Type != platform.EventExit || !x.Exit.RequestedStop || x.Exit.Restarting || x.Exit.Signal != tt.wantSignal || x.Exit.ExitCode != tt.wantCode {
				t.Fatalf("after Stop: state %s, newest event %+v %+v", got.State, x, x.Exit)
			}
			time.Sleep(200 * time.Millisecond) // a stopped machine must stay stopped
			if st := get(t, s, m.ID).State; st != platform.StateStopped {
				t.Errorf("state %s after a requested stop, want it to stay stopped", st)
			}
			if err := s.Start(ctx, "api", m.ID); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "serving again", func() bool { _, err := health(m.Address); return err == nil })
		})
	}
}

func TestSupervisor_Update(t *testing.T) {
	s := newSupervisor(t, Options{})
	ctx := context.Background()
	dir := t.TempDir()
	// A machine the platform gave up on: one retry, then stopped.
	m, _ := s.Create(ctx, "api", platform.Config{Image: testApp(t), Env: map[string]string{"TESTAPP_CRASH_AFTER": "50ms"},
		Restart: platform.Restart{Policy: platform.RestartOnFailure, MaxRetries: 1}})
	waitFor(t, "the platform to give up", func() bool { return get(t, s, m.ID).State == platform.StateStopped })
	before := get(t, s, m.ID)
	c := cfg(t, platform.RestartAlways, nil)
	if _, err := s.Update(ctx, "api", m.ID, c); err != nil {
		t.Fatal(err)
	}
	after := get(t, s, m.ID)
	if after.InstanceID == before.InstanceID || before.RestartCount != 1 || after.RestartCount != 0 || after.Config.Env["TESTAPP_CRASH_AFTER"] != "" {
		t.Errorf("after Update: instance %s (was %s), restart count %d (was %d), env %v", after.InstanceID, before.InstanceID, after.RestartCount, before.RestartCount, after.Config.Env)
	}
	waitFor(t, "serving", func() bool { _, err := health(m.Address); return err == nil })

	// Updating a running machine stops it on request first.
	c = cfg(t, platform.RestartAlways, map[string]string{"TESTAPP_ARGS_FILE": filepath.Join(dir, "args")})
	c.Args = []string{"--flag", "$(touch " + filepath.Join(dir, "pwned") + ")"}
	if _, err := s.Update(ctx, "api", m.ID, c); err != nil {
		t.Fatal(err)
	}
	after = get(t, s, m.ID)
	var types []platform.EventType
	for _, e := range after.Events[:3] {
		types = append(types, e.Type)
	}
	if types[0] != platform.EventStart || types[1] != platform.EventUpdate || types[2] != platform.EventExit || !after.Events[2].Exit.RequestedStop {
		t.Errorf("events after Update = %v, want start, update, requested exit", types)
	}
	waitFor(t, "the args file", func() bool { b, err := os.ReadFile(filepath.Join(dir, "args")); return err == nil && len(b) > 0 })
	b, _ := os.ReadFile(filepath.Join(dir, "args"))
	if args := strings.Split(string(b), "\n"); len(args) != 3 || args[2] != c.Args[1] {
		t.Errorf("argv = %q, want the args passed verbatim", args)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Errorf("an argument reached a shell")
	}
}

func TestSupervisor_SuspendResume(t *testing.T) {
	s := newSupervisor(t, Options{})
	ctx := context.Background()
	m, _ := s.Create(ctx, "api", cfg(t, platform.RestartAlways, nil))
	waitFor(t, "serving", func() bool { _, err := health(m.Address); return err == nil })
	if err := s.Suspend(ctx, "api", m.ID); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, m.ID); got.State != platform.StateSuspended || got.Events[0].Type != platform.EventSuspend {
		t.Fatalf("after Suspend: %s, %+v", got.State, got.Events[0])
	}
	if _, err := health(m.Address); err == nil {
		t.Errorf("a sleeping machine answered")
	}
	// A request sent while it sleeps is answered once it wakes (the
	// connection waits in the listen backlog).
	answered := make(chan error, 1)
	go func() {
		c := &http.Client{Timeout: 10 * time.Second}
		resp, err := c.Get("http://" + m.Address + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := s.Start(ctx, "api", m.ID); err != nil { // Start wakes a sleeping machine
		t.Fatal(err)
	}
	if err := <-answered; err != nil {
		t.Errorf("request sent during sleep: %v", err)
	}
	got := get(t, s, m.ID)
	if got.State != platform.StateStarted || got.Events[0].Type != platform.EventResume || got.RestartCount != 0 {
		t.Errorf("after wake: %s, %+v, restart count %d", got.State, got.Events[0], got.RestartCount)
	}
	if err := s.Resume(ctx, "api", m.ID); !errors.Is(err, platform.ErrConflict) {
		t.Errorf("Resume of a started machine = %v, want ErrConflict", err)
	}
}

func TestSupervisor_ReopenTakesMachinesBack(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{StateDir: dir, StopTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, _ := s.Create(ctx, "api", cfg(t, platform.RestartAlways, nil))
	stopped, _ := s.Create(ctx, "api", cfg(t, platform.RestartAlways, nil))
	waitFor(t, "serving", func() bool { _, err := health(m.Address); return err == nil })
	if err := s.Stop(ctx, "api", stopped.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{StateDir: dir}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second supervisor on the same dir: %v, want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := health(m.Address); err == nil {
		t.Fatalf("machine still answers after Close")
	}
	s2 := newSupervisor(t, Options{StateDir: dir})
	waitFor(t, "serving after reopen", func() bool { _, err := health(m.Address); return err == nil })
	if got := get(t, s2, m.ID); got.State != platform.StateStarted || got.Events[0].Source != "supervisor" {
		t.Errorf("reopened machine: %s, %+v", got.State, got.Events[0])
	}
	if got := get(t, s2, stopped.ID); got.State != platform.StateStopped {
		t.Errorf("a stopped machine came back as %s, want stopped", got.State)
	}
}

func TestSupervisor_Destroy(t *testing.T) {
	dir := t.TempDir()
	s := newSupervisor(t, Options{StateDir: dir})
	ctx := context.Background()
	m, _ := s.Create(ctx, "api", cfg(t, platform.RestartAlways, nil))
	if err := s.Destroy(ctx, "api", m.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "api", m.ID); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("Get after Destroy = %v, want ErrNotFound", err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "apps", "api", "*")); len(files) != 0 {
		t.Errorf("files left after Destroy: %v", files)
	}
	if err := s.Stop(ctx, "api", m.ID); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("Stop after Destroy = %v, want ErrNotFound", err)
	}
}

// TestSupervisor_MissingImageRefused: a missing or non-executable image is
// refused before a machine exists (it used to crash-loop with exit 127).
func TestSupervisor_MissingImageRefused(t *testing.T) {
	s := newSupervisor(t, Options{})
	notExec := filepath.Join(t.TempDir(), "app")
	if err := os.WriteFile(notExec, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, img := range []string{"/nonexistent/app", notExec} {
		if _, err := s.Create(context.Background(), "api", platform.Config{Image: img}); !errors.Is(err, platform.ErrImageNotFound) {
			t.Errorf("Create(%s) = %v, want ErrImageNotFound", img, err)
		}
	}
	if list, _ := s.List(context.Background(), "api"); len(list) != 0 {
		t.Errorf("machines after refused images: %d", len(list))
	}
}

// TestSupervisor_ExecFailure: an executable the kernel cannot run exits
// 127, under the restart policy like any exit.
func TestSupervisor_ExecFailure(t *testing.T) {
	s := newSupervisor(t, Options{})
	bad := filepath.Join(t.TempDir(), "app")
	if err := os.WriteFile(bad, []byte("not a program\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := s.Create(context.Background(), "api", platform.Config{Image: bad,
		Restart: platform.Restart{Policy: platform.RestartOnFailure, MaxRetries: 1}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the machine to stop", func() bool { return get(t, s, m.ID).State == platform.StateStopped })
	got := get(t, s, m.ID)
	if x := got.Events[0]; x.Type != platform.EventExit || x.Exit.ExitCode != 127 || got.RestartCount != 1 {
		t.Errorf("newest event %+v, restart count %d; want exit 127 after 1 retry", x, got.RestartCount)
	}
}

func TestSupervisor_BadInput(t *testing.T) {
	s := newSupervisor(t, Options{})
	if _, err := s.Create(context.Background(), "api", platform.Config{}); !errors.Is(err, platform.ErrInvalid) {
		t.Errorf("Create without image = %v, want ErrInvalid", err)
	}
	if _, err := New(Options{}); !errors.Is(err, platform.ErrInvalid) {
		t.Errorf("New without a state dir = %v, want ErrInvalid", err)
	}
	if list, _ := s.List(context.Background(), "api"); len(list) != 0 {
		t.Errorf("machines after bad input: %+v", list)
	}
}

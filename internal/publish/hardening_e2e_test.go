package publish_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/platform/local"
	"github.com/mythex/mythex/internal/publish"
	"github.com/mythex/mythex/internal/testbin"
)

// skewedClock is the real clock read off by skew: a platform whose clock is
// wrong. Timers run in real time.
type skewedClock struct {
	clockwork.Clock
	skew time.Duration
}

func (c skewedClock) Now() time.Time                  { return c.Clock.Now().Add(c.skew) }
func (c skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c skewedClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// testApp is the local platform's test machine (internal/platform/local's
// testdata/testapp) with env.
func testApp(t *testing.T, version string, env ...string) platform.Config {
	t.Helper()
	bin, err := testbin.Build("../platform/local/testdata/testapp")
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{"VERSION": version}
	for i := 0; i+1 < len(env); i += 2 {
		e[env[i]] = env[i+1]
	}
	return platform.Config{Image: bin, Env: e, Restart: platform.Restart{Policy: platform.RestartAlways}}
}

// localGate is a gate over an in-process local platform.
func localGate(t *testing.T, sopts local.Options, opts publish.Options) (*publish.Gate, *local.Supervisor) {
	t.Helper()
	sopts.StateDir = t.TempDir()
	sopts.PickPort = machinePort
	if sopts.RestartDelay == 0 {
		sopts.RestartDelay = 100 * time.Millisecond
	}
	if sopts.StopTimeout == 0 {
		sopts.StopTimeout = 3 * time.Second
	}
	sup, err := local.New(sopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sup.Close() })
	store, err := publish.OpenStore(filepath.Join(t.TempDir(), publish.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	g, err := publish.NewGate(publish.GateConfig{Platform: sup, Store: store, LockDir: t.TempDir(), Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	return g, sup
}

func mustPublish(t *testing.T, g *publish.Gate, cfg platform.Config) publish.Result {
	t.Helper()
	res, err := g.Publish(context.Background(), publish.Request{App: "api", Config: cfg})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return res
}

// TestLocal_ClockSkewDoesNotSwitchOffTheStableWindow: the local platform's
// clock 25 s behind ours; a release crashing 1.2 s after every boot (within
// the 2 s stable window) still fails and v1 is restored.
func TestLocal_ClockSkewDoesNotSwitchOffTheStableWindow(t *testing.T) {
	t.Parallel() // its own local platform, state dirs and ports
	for _, skew := range []time.Duration{-25 * time.Second, 25 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			g, sup := localGate(t, local.Options{Clock: skewedClock{clockwork.NewRealClock(), skew}}, e2eOptions)
			v1 := mustPublish(t, g, testApp(t, "v1"))
			if v1.Verdict.Status != publish.StatusLive {
				t.Fatalf("v1 under skew %s = %+v", skew, v1.Verdict)
			}
			v2 := mustPublish(t, g, testApp(t, "v2", "TESTAPP_CRASH_AFTER", "1200ms"))
			if v2.Verdict.Status != publish.StatusFailed || v2.Release.Status != publish.ReleaseRolledBack {
				t.Fatalf("crash 1.2 s after boot under skew %s = %+v, release %s; want failed, rolled back", skew, v2.Verdict, v2.Release.Status)
			}
			m, _ := sup.Get(context.Background(), "api", v1.Release.Machines[0])
			if m.Release() != v1.Release.ID {
				t.Errorf("after the rollback the machine runs %s", m.Release())
			}
		})
	}
}

// TestLocal_WrongHealthAnswersFailAfterTheStartPeriod: an app answering 500
// fails after the start period and three wrong looks; one answering 503, or
// refusing, while it boots for 3 s goes live. Each case publishes over a
// live v1 on a platform of its own, in parallel: each waits seconds on its
// app.
func TestLocal_WrongHealthAnswersFailAfterTheStartPeriod(t *testing.T) {
	t.Parallel() // its own local platforms, state dirs and ports
	opts := e2eOptions
	opts.StartPeriod, opts.UnhealthyThreshold = time.Second, 3
	t.Run("500", func(t *testing.T) {
		t.Parallel()
		g, _ := localGate(t, local.Options{}, opts)
		mustPublish(t, g, testApp(t, "v1"))
		res := mustPublish(t, g, testApp(t, "v2", "TESTAPP_HEALTH_STATUS", "500"))
		if res.Verdict.Status != publish.StatusFailed || !strings.Contains(strings.Join(res.Verdict.Reasons, " "), "HTTP 500") {
			t.Fatalf("health 500 = %+v", res.Verdict)
		}
		if limit := opts.Window / 2; res.Elapsed-res.Rollback.Took > limit {
			t.Errorf("health-500 verdict after %s, want well before the window's end", res.Elapsed-res.Rollback.Took)
		}
	})
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"boot 503", []string{"TESTAPP_BOOT", "3s", "TESTAPP_BOOT_STATUS", "503"}},
		{"boot refusing", []string{"TESTAPP_BOOT", "3s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, _ := localGate(t, local.Options{}, opts)
			mustPublish(t, g, testApp(t, "v1"))
			res := mustPublish(t, g, testApp(t, "v3", tc.env...))
			if res.Verdict.Status != publish.StatusLive {
				t.Errorf("slow boot %v = %+v, want live", tc.env, res.Verdict)
			}
		})
	}
}

// TestLocal_SignalShownNotExitCodeMinusOne: a release killed by SIGKILL
// after every boot is reported with its signal.
func TestLocal_SignalShownNotExitCodeMinusOne(t *testing.T) {
	t.Parallel() // its own local platform, state dirs and ports
	g, _ := localGate(t, local.Options{}, e2eOptions)
	mustPublish(t, g, testApp(t, "v1"))
	res := mustPublish(t, g, testApp(t, "v2", "TESTAPP_CRASH_AFTER", "300ms", "TESTAPP_CRASH_SIGNAL", "9"))
	r := strings.Join(res.Verdict.Reasons, " ")
	if res.Verdict.Status != publish.StatusFailed || !strings.Contains(r, "killed by signal 9 (SIGKILL)") || strings.Contains(r, "exit code -1") {
		t.Fatalf("SIGKILL loop = %+v", res.Verdict)
	}
}

// TestLocal_BadImageRefusedBeforeAnyMachineChanges: a missing executable is
// bad input; the serving machine is not touched.
func TestLocal_BadImageRefusedBeforeAnyMachineChanges(t *testing.T) {
	t.Parallel() // its own local platform, state dirs and ports
	g, sup := localGate(t, local.Options{}, e2eOptions)
	v1 := mustPublish(t, g, testApp(t, "v1"))
	before, _ := sup.Get(context.Background(), "api", v1.Release.Machines[0])
	cfg := testApp(t, "v2")
	cfg.Image = filepath.Join(t.TempDir(), "missing")
	_, err := g.Publish(context.Background(), publish.Request{App: "api", Config: cfg})
	if !errors.Is(err, publish.ErrInvalid) || !errors.Is(err, platform.ErrImageNotFound) {
		t.Fatalf("Publish of a missing executable = %v, want ErrInvalid, image not found", err)
	}
	after, _ := sup.Get(context.Background(), "api", v1.Release.Machines[0])
	if after.InstanceID != before.InstanceID || after.State != platform.StateStarted {
		t.Errorf("the machine changed: %s %s -> %s %s", before.InstanceID, before.State, after.InstanceID, after.State)
	}
}

// TestLocal_SlowUpdateIsJudgedOnceSettled: the old process ignores SIGTERM,
// so an update takes the 2 s stop timeout, twice the 1 s call timeout. A
// good release goes live; a crashing one fails for its crashes and the
// rollback (also slower than a call) completes.
func TestLocal_SlowUpdateIsJudgedOnceSettled(t *testing.T) {
	t.Parallel() // its own local platform, state dirs and ports
	opts := e2eOptions
	opts.CallTimeout = time.Second
	for _, tc := range []struct {
		name string
		env  []string
		want publish.Status
	}{{"good", nil, publish.StatusLive}, {"crashing", []string{"TESTAPP_CRASH_AFTER", "300ms"}, publish.StatusFailed}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, sup := localGate(t, local.Options{StopTimeout: 2 * time.Second}, opts)
			v1 := mustPublish(t, g, testApp(t, "v1", "TESTAPP_IGNORE_TERM", "1"))
			res := mustPublish(t, g, testApp(t, "v2", append([]string{"TESTAPP_IGNORE_TERM", "1"}, tc.env...)...))
			if res.Verdict.Status != tc.want {
				t.Fatalf("slow update (%s) = %+v, want %s", tc.name, res.Verdict, tc.want)
			}
			if tc.want == publish.StatusFailed {
				if res.Rollback == nil || res.Rollback.Error != "" {
					t.Fatalf("rollback = %+v", res.Rollback)
				}
				m, _ := sup.Get(context.Background(), "api", v1.Release.Machines[0])
				if m.Release() != v1.Release.ID || m.State != platform.StateStarted {
					t.Errorf("after the rollback the machine runs %s (%s)", m.Release(), m.State)
				}
			}
		})
	}
}

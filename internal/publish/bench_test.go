package publish_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/platform/local"
	"github.com/mythex/mythex/internal/publish"
)

// benchShape is one release behaviour bench/publish.sh measures.
type benchShape struct {
	name string
	env  []string
	want publish.Status
	// ideal is the first look at which the evidence for the verdict exists,
	// from the looks the gate took and the machine's events.
	ideal func(o publish.Options, looks []publish.Event) time.Time
}

// TestBench_PublishVerdicts is bench/publish.sh's measurement (run only with
// MYTHEX_BENCH=1): on the local platform at the default timings, the time
// from the start of a publish to its verdict for each crash shape, a
// health-500 app and a healthy slow boot, RUNS runs each, against the ideal.
func TestBench_PublishVerdicts(t *testing.T) {
	if os.Getenv("MYTHEX_BENCH") == "" {
		t.Skip("set MYTHEX_BENCH=1 (bench/publish.sh)")
	}
	runs := 3
	if n, err := fmt.Sscan(os.Getenv("RUNS"), &runs); n != 1 || err != nil {
		runs = 3
	}
	crashLoop := func(o publish.Options, ev []publish.Event) time.Time {
		// The first look by which two crashes of the new release are known
		// (in that look's list, or one in an earlier look and a later one
		// now), closer than the crash-loop window.
		known := map[int64]time.Time{}
		var began time.Time
		for _, e := range ev {
			if e.Kind == publish.EventStep && began.IsZero() {
				began = e.At
			}
		}
		for _, e := range lookEvents(ev) {
			m := e.Look.Machines[0].Machine
			for _, x := range m.Events {
				if publish.IsCrash(x, m.Config.Restart.Effective().Policy) && !x.At().Before(began) {
					known[x.At().UnixNano()] = x.At()
				}
			}
			var ts []time.Time
			for _, t := range known {
				ts = append(ts, t)
			}
			sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
			for i := 1; i < len(ts); i++ {
				if ts[i].Sub(ts[i-1]) < max(o.LoopWindow, o.StableFor) {
					return e.At
				}
			}
		}
		return time.Time{}
	}
	gaveUpOrLoop := func(o publish.Options, ev []publish.Event) time.Time {
		a := crashLoop(o, ev)
		for _, e := range lookEvents(ev) {
			if m := e.Look.Machines[0].Machine; m.State == platform.StateStopped && (a.IsZero() || e.At.Before(a)) {
				return e.At
			}
		}
		return a
	}
	health500 := func(o publish.Options, ev []publish.Event) time.Time {
		// The UnhealthyThreshold-th look answering 500 after the start
		// period, counted from the first look that saw the machine started.
		var first time.Time
		n := 0
		for _, e := range lookEvents(ev) {
			ml := e.Look.Machines[0]
			if ml.Machine.State != platform.StateStarted {
				continue
			}
			if first.IsZero() {
				first = e.At
			}
			if e.At.Sub(first) >= o.StartPeriod && ml.Health.Status == 500 {
				if n++; n >= o.UnhealthyThreshold {
					return e.At
				}
			}
		}
		return time.Time{}
	}
	slowBoot := func(o publish.Options, ev []publish.Event) time.Time {
		// The first look at least StableFor after the machine started (on
		// the platform's clock, the same as ours here) that passes its
		// health check.
		for _, e := range lookEvents(ev) {
			ml := e.Look.Machines[0]
			if ml.Machine.State == platform.StateStarted && ml.Health.OK && e.At.Sub(ml.Machine.StartedAt) >= o.StableFor {
				return e.At
			}
		}
		return time.Time{}
	}
	shapes := []benchShape{
		{"crash 0.5 s after boot", []string{"TESTAPP_CRASH_AFTER", "500ms"}, publish.StatusFailed, gaveUpOrLoop},
		{"crash 7 s after boot", []string{"TESTAPP_CRASH_AFTER", "7s"}, publish.StatusFailed, gaveUpOrLoop},
		{"crash 12 s after boot", []string{"TESTAPP_CRASH_AFTER", "12s"}, publish.StatusFailed, gaveUpOrLoop},
		{"exit 0 (0.5 s after boot)", []string{"TESTAPP_CRASH_AFTER", "500ms", "TESTAPP_EXIT_CODE", "0"}, publish.StatusFailed, gaveUpOrLoop},
		{"SIGKILL 2 s after boot", []string{"TESTAPP_CRASH_AFTER", "2s", "TESTAPP_CRASH_SIGNAL", "9"}, publish.StatusFailed, gaveUpOrLoop},
		{"health check answers 500", []string{"TESTAPP_HEALTH_STATUS", "500"}, publish.StatusFailed, health500},
		{"healthy, slow boot (503 for 20 s)", []string{"TESTAPP_BOOT", "20s", "TESTAPP_BOOT_STATUS", "503"}, publish.StatusLive, slowBoot},
	}
	type result struct {
		took, ideal time.Duration
		status      publish.Status
	}
	results := make([][]result, len(shapes))
	for run := 0; run < runs; run++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i, sh := range shapes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				took, ideal, st := benchOne(t, sh)
				mu.Lock()
				results[i] = append(results[i], result{took, ideal, st})
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	var b strings.Builder
	o := publish.DefaultOptions
	fmt.Fprintf(&b, "local platform, default timings (looks every %s, poll %s, stable %s, start period %s, unhealthy threshold %d), on-failure max_retries %d\n",
		o.LookInterval, o.PollInterval, o.StableFor, o.StartPeriod, o.UnhealthyThreshold, platform.DefaultMaxRetries)
	fmt.Fprintf(&b, "%-36s %-8s %-28s %-28s %s\n", "shape", "verdict", "time to verdict (runs)", "ideal (runs)", "worst ratio")
	for i, sh := range shapes {
		var took, ideal []string
		worst := 0.0
		status := ""
		for _, r := range results[i] {
			took = append(took, fmt.Sprintf("%.1f", r.took.Seconds()))
			ideal = append(ideal, fmt.Sprintf("%.1f", r.ideal.Seconds()))
			if r.ideal > 0 {
				worst = max(worst, r.took.Seconds()/r.ideal.Seconds())
			}
			if r.status != sh.want {
				status = fmt.Sprintf(" (run verdict %s, want %s)", r.status, sh.want)
			}
			if status == "" {
				status = string(r.status)
			}
		}
		fmt.Fprintf(&b, "%-36s %-8s %-28s %-28s %.2f×\n", sh.name, status, strings.Join(took, " / ")+" s", strings.Join(ideal, " / ")+" s", worst)
	}
	t.Log("\n" + b.String())
	fmt.Print(b.String())
}

func lookEvents(ev []publish.Event) []publish.Event {
	var out []publish.Event
	for _, e := range ev {
		if e.Kind == publish.EventLook && len(e.Look.Machines) > 0 && e.Look.Machines[0].ErrKind == "" {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// benchOne publishes a good v1 (judged quickly by a second gate), then the
// shape at the default timings; it returns the time to the verdict, the
// ideal, and the verdict.
func benchOne(t *testing.T, sh benchShape) (time.Duration, time.Duration, publish.Status) {
	dir, err := os.MkdirTemp("", "mythex-bench-")
	if err != nil {
		t.Error(err)
		return 0, 0, ""
	}
	defer os.RemoveAll(dir)
	sup, err := local.New(local.Options{StateDir: filepath.Join(dir, "platform"), StopTimeout: 3 * time.Second})
	if err != nil {
		t.Error(err)
		return 0, 0, ""
	}
	defer sup.Close()
	store, err := publish.OpenStore(filepath.Join(dir, publish.DBFile))
	if err != nil {
		t.Error(err)
		return 0, 0, ""
	}
	defer store.Close()
	quick, _ := publish.NewGate(publish.GateConfig{Platform: sup, Store: store, LockDir: dir, Options: e2eOptions})
	ctx := context.Background()
	if _, err := quick.Publish(ctx, publish.Request{App: "api", Config: testApp(t, "v1")}); err != nil {
		t.Error(err)
		return 0, 0, ""
	}
	var mu sync.Mutex
	var events []publish.Event
	g, _ := publish.NewGate(publish.GateConfig{Platform: sup, Store: store, LockDir: dir, Observer: func(e publish.Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}})
	cfg := testApp(t, "v2", sh.env...)
	cfg.Restart = platform.Restart{Policy: platform.RestartOnFailure}
	began := time.Now()
	res, err := g.Publish(ctx, publish.Request{App: "api", Config: cfg})
	if err != nil {
		t.Error(err)
		return 0, 0, ""
	}
	mu.Lock()
	defer mu.Unlock()
	var decided time.Time
	for _, e := range events {
		if e.Kind == publish.EventLook && e.Verdict.Status != publish.StatusPending {
			decided = e.At
		}
	}
	idealAt := sh.ideal(g.Options(), events)
	ideal := time.Duration(0)
	if !idealAt.IsZero() {
		ideal = idealAt.Sub(began)
	}
	return decided.Sub(began), ideal, res.Verdict.Status
}

package fly

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/publish"
)

// TestBench_FlyFake is bench/publish.sh's Fly part (run only with
// MYTHEX_BENCH=1): the gate over the paced client against the faithful fake
// enforcing the documented rate limits, at the default timings, on the
// fake's clock — time to verdict per crash shape, API calls per publish,
// and requests refused for going over the limits (target 0).
func TestBench_FlyFake(t *testing.T) {
	if os.Getenv("MYTHEX_BENCH") == "" {
		t.Skip("set MYTHEX_BENCH=1 (bench/publish.sh)")
	}
	shapes := []struct {
		name string
		req  publish.Request
	}{
		{"crash 2 s after boot (always)", flyReq("registry.fly.io/api:crash", platform.RestartAlways, 0)},
		{"exit 0 every 2 s (always)", flyReq("registry.fly.io/api:exit0", platform.RestartAlways, 0)},
		{"crash 2 s after boot (on-failure, max_retries 1)", flyReq("registry.fly.io/api:crash", platform.RestartOnFailure, 1)},
		{"healthy", flyReq("registry.fly.io/api:good2", platform.RestartAlways, 0)},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Fly fake at the documented limits (actions %v/s burst %d per machine, reads %v/s burst %d), default timings, 3 machines\n",
		float64(ActionRate), ActionBurst, float64(ReadRate), ReadBurst)
	fmt.Fprintf(&b, "%-48s %-8s %-10s %-8s %-6s %s\n", "shape", "verdict", "verdict s", "calls", "429s", "calls by kind")
	for _, sh := range shapes {
		f := newFakeFly(t)
		f.limits = true
		store, lockDir := openStore(t), t.TempDir()
		good := flyReq("registry.fly.io/api:good", platform.RestartAlways, 0)
		good.Machines = 3
		if res, err, _ := flyRun(t, f, store, lockDir, publish.Options{Window: 5 * time.Minute}, good); err != nil || res.Verdict.Status != publish.StatusLive {
			t.Fatalf("good: %+v %v", res.Verdict, err)
		}
		began := f.clock.Now()
		before := f.paced.Calls()
		res, err, c := flyRun(t, f, store, lockDir, publish.Options{Window: 5 * time.Minute}, sh.req)
		if err != nil {
			t.Fatal(err)
		}
		took := res.Elapsed
		if res.Rollback != nil {
			took -= res.Rollback.Took
		}
		calls := c.Calls()
		total := 0
		var kinds []string
		for k, n := range calls {
			n -= before[k]
			if n == 0 {
				continue
			}
			total += n
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(kinds)
		fmt.Fprintf(&b, "%-48s %-8s %-10.1f %-8d %-6d %s (whole publish incl. rollback: %.1f s)\n", sh.name, res.Verdict.Status, took.Seconds(), total,
			f.overLimits, strings.Join(kinds, ", "), f.clock.Since(began).Seconds())
		if f.overLimits != 0 {
			t.Errorf("%s: %d requests over the documented limits", sh.name, f.overLimits)
		}
	}
	t.Log("\n" + b.String())
	fmt.Print(b.String())
}

package agent

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
)

// The deployer dies in its release loop — after the whole fleet passed the
// final sweep, before it marked this host good — and the host lease runs
// out. A lease whose deploy committed completes the release: the new
// version stays current and running and becomes last good, so every host of
// the fleet ends on it. One that did not commit restores the last good, as
// before. A commit for a version that is not current is refused.
func TestAgent_CommittedLeaseCompletesRelease(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		commit       string // version committed; "" for none
		commitRefuse bool   // the commit is refused (another version)
		wantVersion  string // current, last good and running after recovery
		wantReleased bool
	}{
		"committed: release completed":                {commit: "v2", wantVersion: "v2", wantReleased: true},
		"not committed: restored":                     {wantVersion: "v1"},
		"commit of another version refused: restored": {commit: "v3", commitRefuse: true, wantVersion: "v1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each case owns its agent, clock and state dir
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			clock := clockwork.NewFakeClock()
			dir := memDir(t)
			a, err := New(Config{Host: "web-1", StateDir: dir, Runtime: newRaceRuntime(dir, 1, 0), RuntimeName: "race", Clock: clock, StartTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			c := serveAgent(t, a)
			h := &raceHost{t: t}
			deploy := func(l agentapi.Lease, version string) {
				t.Helper()
				if _, err := c.Publish(ctx, l.ID, h.definition(version)); err != nil {
					t.Fatal(err)
				}
				if err := c.Drain(ctx, l.ID, nil); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Stop(ctx, l.ID); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Start(ctx, l.ID); err != nil {
					t.Fatal(err)
				}
			}
			h.deployGood(ctx, c, "v1")

			// The deploy of v2: deployed and verified here, then the
			// fleet's commit (or none), then the deployer dies.
			const ttl = 10 * time.Second
			l, err := c.AcquireLease(ctx, false, "dying deploy v2", ttl)
			if err != nil {
				t.Fatal(err)
			}
			deploy(l, "v2")
			if tc.commit != "" {
				err := c.Commit(ctx, l.ID, tc.commit)
				if (err != nil) != tc.commitRefuse {
					t.Fatalf("commit %s: %v, want refused %v", tc.commit, err, tc.commitRefuse)
				}
			}
			if err := c.Commit(ctx, "not-the-lease", "v2"); err == nil {
				t.Error("a commit without the live lease was accepted")
			}
			clock.Advance(ttl + time.Second)
			var st agentapi.Status
			for {
				st, err = c.Status(ctx)
				if err == nil && st.Lease == nil && st.Recovery != nil && st.Recovery.State != agentapi.RecoveryRunning && st.LockHolder == "" {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("the host was not recovered: %+v (%v)", st, err)
				}
				time.Sleep(2 * time.Millisecond) // polling the condition, not synchronising on time
			}
			r := st.Recovery
			if r.State != agentapi.RecoveryRestored || r.Version != tc.wantVersion || r.Released != tc.wantReleased {
				t.Errorf("recovery = %+v, want restored on %s, released %v", r, tc.wantVersion, tc.wantReleased)
			}
			for _, ref := range []definition.Ref{definition.RefCurrent, definition.RefLastGood} {
				d, err := a.Store().Get(ref)
				if err != nil {
					t.Fatalf("%s after the recovery: %v", ref, err)
				}
				if d.Version != tc.wantVersion {
					t.Errorf("%s after the recovery is %s, want %s", ref, d.Version, tc.wantVersion)
				}
			}
			for _, s := range st.Services {
				if s.Running && s.Version != tc.wantVersion {
					t.Errorf("%s runs %s after the recovery, want %s", s.Name, s.Version, tc.wantVersion)
				}
			}
			if !st.Restore.Restored {
				t.Errorf("restore = %+v, want the host whole", st.Restore)
			}
		})
	}
}

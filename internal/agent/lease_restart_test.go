package agent

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/runtime/process"
	"github.com/mythex/mythex/internal/watchdog"
)

func TestRemainingAfterRestart(t *testing.T) {
	t.Parallel()
	written := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rec := leaseRecord{TTL: 30 * time.Second, Remaining: 20 * time.Second, WrittenAt: written, BootID: "boot-a", SinceBoot: time.Hour}
	cases := []struct {
		name      string
		now       time.Time
		bootID    string
		sinceBoot time.Duration
		want      time.Duration
		how       restartClock
	}{
		{"same boot: 5s gone on the boot clock", written.Add(5 * time.Second), "boot-a", time.Hour + 5*time.Second, 15 * time.Second, clockBoot},
		{"same boot, wall clock stepped back an hour: boot clock wins", written.Add(-time.Hour), "boot-a", time.Hour + 5*time.Second, 15 * time.Second, clockBoot},
		{"same boot, wall clock stepped forward a day: boot clock wins", written.Add(24 * time.Hour), "boot-a", time.Hour + 5*time.Second, 15 * time.Second, clockBoot},
		{"same boot, gone longer than the lease", written, "boot-a", time.Hour + time.Minute, 0, clockBoot},
		{"another boot: wall clock", written.Add(8 * time.Second), "boot-b", time.Minute, 12 * time.Second, clockWall},
		{"another boot, wall clock went backwards: what was left, no more", written.Add(-time.Hour), "boot-b", time.Minute, 20 * time.Second, clockWallBackwards},
		{"another boot, wall clock far ahead: expired", written.Add(time.Hour), "boot-b", time.Minute, 0, clockWall},
		{"no boot clock: wall clock", written.Add(time.Second), "", 0, 19 * time.Second, clockWall},
		{"boot clock smaller than at the write (bad record): wall clock", written.Add(time.Second), "boot-a", time.Minute, 19 * time.Second, clockWall},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, how := remainingAfterRestart(rec, tc.now, tc.bootID, tc.sinceBoot)
			if got != tc.want || how != tc.how {
				t.Errorf("remaining = %v by %s, want %v by %s", got, how, tc.want, tc.how)
			}
		})
	}
	t.Run("a record claiming more than its TTL is clamped", func(t *testing.T) {
		r := rec
		r.Remaining = time.Hour
		if got, _ := remainingAfterRestart(r, written, "boot-a", time.Hour); got != r.TTL {
			t.Errorf("remaining = %v, want the TTL %v", got, r.TTL)
		}
	})
}

func TestPlanRestore(t *testing.T) {
	t.Parallel()
	const a, b, c = "aaaa", "bbbb", "cccc"
	cases := []struct {
		name     string
		refs     definition.Refs
		restore  *restoreTarget
		want     restoreAction
		wantHash string
		wantErr  bool
	}{
		{"deploy died after publish: last good is previous", definition.Refs{Current: b, Previous: a, LastGood: a}, &restoreTarget{Hash: a}, restoreRollback, a, false},
		{"deploy died before publish: last good is current", definition.Refs{Current: a, LastGood: a}, &restoreTarget{Hash: a}, restoreStartCurrent, a, false},
		{"last good is neither current nor previous", definition.Refs{Current: c, Previous: b, LastGood: a}, &restoreTarget{Hash: a}, restorePublishLastGood, a, false},
		{"marked good during the dead deploy: the newer last good wins", definition.Refs{Current: b, Previous: a, LastGood: b}, &restoreTarget{Hash: a}, restoreStartCurrent, b, false},
		{"never marked good: what ran before the deploy", definition.Refs{Current: b, Previous: a}, &restoreTarget{Hash: a}, restoreRollback, a, false},
		{"first rollout: nothing ran before", definition.Refs{Current: a}, nil, restoreStopAll, "", false},
		{"what ran before is gone from the store", definition.Refs{Current: c, Previous: b}, &restoreTarget{Hash: a, Version: "v1"}, "", a, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, hash, err := planRestore(tc.refs, tc.restore)
			if got != tc.want || hash != tc.wantHash || (err != nil) != tc.wantErr {
				t.Errorf("planRestore = %q %q %v; want %q %q err %v", got, hash, err, tc.want, tc.wantHash, tc.wantErr)
			}
		})
	}
}

// restart simulates the agent process dying and starting again on the same
// state directory: the old agent and runtime let go of everything (services
// keep running), and a new runtime and agent open the directory.
func (h *testHost) restart(t *testing.T, opts ...func(*Config)) {
	t.Helper()
	h.srv.Close()
	h.agent.Close()
	_ = h.cfg.Runtime.Close()
	rt, err := process.New(process.Options{StateDir: filepath.Join(h.dir, "state", "runtime")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := h.cfg
	cfg.Runtime = rt
	for _, o := range opts {
		o(&cfg)
	}
	h.serve(t, cfg)
}

// The scenario: the agent is SIGKILLed while its host is in stop and
// comes back later. The lease must come back with it, its clock going on;
// the dead deploy's lease then expires, and the recovery restores last good
// and puts the host back into the load balancer — the watchdog never starts
// the half-deployed version, and status says whether the host is whole.
func TestAgent_LeaseSurvivesAgentRestartMidStop(t *testing.T) {
	t.Parallel()
	fast := func(c *Config) { c.Watchdog = &watchdog.Policy{Interval: 50 * time.Millisecond, FailuresBeforeHeal: 2} }
	h := newTestHost(t, fast)
	ctx := ctxT(t)
	v1 := h.deployGood(t, ctx, "v1")

	// The lease is taken for a minute, so that no loaded machine can make
	// the restart outlast it (a 2 s lease once ran out during the restart,
	// and the check below saw no lease: one side of a race); once it is seen
	// resumed, a renewal shortens it to watch it run out.
	const ttl = 2 * time.Second
	l, err := h.client.AcquireLease(ctx, false, "deploy v2 by test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Publish(ctx, l.ID, h.def("v2", nil)); err != nil {
		t.Fatal(err)
	}
	if err := h.client.Drain(ctx, l.ID, []string{"gateway"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Stop(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	h.restart(t, fast)

	st, err := h.client.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Lease == nil || st.Lease.ID != l.ID || st.Lease.Step != "stop" || st.Lease.StepState != stepDone {
		t.Fatalf("lease after restart = %+v, want %s resumed at step stop", st.Lease, l.ID)
	}
	if st.Lease.Restore == nil || st.Lease.Restore.Version != "v1" {
		t.Errorf("lease restore = %+v, want v1", st.Lease.Restore)
	}
	if st.Restore == nil || st.Restore.Restored {
		t.Errorf("restore = %+v while v2 is half deployed, want not restored", st.Restore)
	}
	// The deploy could go on with its lease: it is the same one.
	if _, err := h.client.RenewLease(ctx, false, l.ID, ttl); err != nil {
		t.Fatalf("renew the resumed lease: %v", err)
	}
	// It does not renew it again: the lease runs out, and the host is
	// recovered.
	st = h.waitStatus(t, ctx, "recovery after the resumed lease expired", func(st agentapi.Status) bool {
		return st.Lease == nil && st.Recovery != nil && st.Recovery.State != agentapi.RecoveryRunning && st.LockHolder == ""
	})
	if st.Recovery.State != agentapi.RecoveryRestored || st.Recovery.Version != "v1" || !st.Recovery.Registered || st.Recovery.Step != "stop" {
		t.Errorf("recovery = %+v, want restored to v1, registered, from step stop", st.Recovery)
	}
	if st.Restore == nil || !st.Restore.Restored || st.Restore.Version != "v1" {
		t.Errorf("restore = %+v, want restored on v1", st.Restore)
	}
	if got, _ := h.agent.Store().Bytes(definition.RefCurrent); string(got) != string(v1) {
		t.Error("current after recovery is not the last good v1")
	}
	for _, s := range st.Services {
		if s.Running && s.Version != "v1" {
			t.Errorf("%s runs %s after recovery", s.Name, s.Version)
		}
	}
	if len(h.reg.registered()) == 0 {
		t.Error("the target was not registered with the load balancer again")
	}
	if _, err := os.Stat(filepath.Join(h.cfg.StateDir, hostLeaseFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lease file after a finished recovery: %v, want gone", err)
	}
}

// A lease that ran out while no agent ran is recovered as soon as the agent
// starts, before the watchdog looks at the host.
func TestAgent_LeaseExpiredWhileAgentDownRecoversAtStart(t *testing.T) {
	t.Parallel()
	boot := &stepBootClock{id: "b", since: time.Hour}
	h := newTestHost(t, func(c *Config) { c.BootClock = boot })
	ctx := ctxT(t)
	h.deployGood(t, ctx, "v1")
	l, _ := h.client.AcquireLease(ctx, false, "dying deploy", 20*time.Second)
	if _, err := h.client.Publish(ctx, l.ID, h.def("v2", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Stop(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	// The agent dies, and stays away longer than the lease by the boot
	// clock (the wall clock says no time passed: it does not count).
	h.restart(t, func(*Config) { boot.since += time.Minute })
	st := h.waitStatus(t, ctx, "recovery at start", func(st agentapi.Status) bool {
		return st.Recovery != nil && st.Recovery.State != agentapi.RecoveryRunning
	})
	if st.Recovery.State != agentapi.RecoveryRestored || st.Recovery.Version != "v1" {
		t.Fatalf("recovery = %+v, want restored to v1", st.Recovery)
	}
	if !st.Restore.Restored {
		t.Errorf("restore = %+v, want restored", st.Restore)
	}
}

// stepBootClock is a BootClock a test moves by hand.
type stepBootClock struct {
	id    string
	since time.Duration
}

func (b *stepBootClock) Boot() (string, time.Duration, error) { return b.id, b.since, nil }

// The watchdog heals only a verified definition: with a half-deployed
// current definition and no lease (its file lost), it waits rather than
// start the unverified version.
func TestHealable_RefusesHalfDeployed(t *testing.T) {
	t.Parallel()
	h := newTestHost(t)
	ctx := ctxT(t)
	l, _ := h.client.AcquireLease(ctx, false, "first deploy", time.Minute)
	h.deployV(t, ctx, l.ID, h.def("v1", nil))
	if d, err := (healable{h.agent}).Current(); err != nil || d.Version != "v1" {
		t.Fatalf("healable after a whole start = %v, %v; want v1 (verified here, not yet marked good)", d, err)
	}
	if _, err := h.client.Publish(ctx, l.ID, h.def("v2", nil)); err != nil {
		t.Fatal(err)
	}
	if d, err := (healable{h.agent}).Current(); err != nil || d.Version != "v2" {
		t.Errorf("healable under a lease = %v, %v; want v2 as is (the watchdog skips on the lock)", d, err)
	}
	// The lease's file is lost and the agent restarts: no lease, v2 current.
	h.agent.hostLease.shutdown()
	if err := os.Remove(filepath.Join(h.cfg.StateDir, hostLeaseFile)); err != nil {
		t.Fatal(err)
	}
	h.restart(t)
	if _, err := (healable{h.agent}).Current(); !errors.Is(err, errUnverified) {
		t.Errorf("healable with a half-deployed v2 = %v, want errUnverified", err)
	}
}

func TestAgent_LeaseBreak(t *testing.T) {
	t.Parallel()
	h := newTestHost(t)
	ctx := ctxT(t)
	h.deployGood(t, ctx, "v1")

	if _, err := h.client.BreakLease(ctx, false, false, "ops"); !errors.Is(err, agentapi.ErrNoLease) {
		t.Errorf("break with no lease = %v, want ErrNoLease", err)
	}
	l, _ := h.client.AcquireLease(ctx, false, "deploy v2 by ci", time.Minute)
	if _, err := h.client.Publish(ctx, l.ID, h.def("v2", nil)); err != nil {
		t.Fatal(err)
	}
	_, err := h.client.BreakLease(ctx, false, false, "ops")
	if !errors.Is(err, agentapi.ErrLeaseHeld) {
		t.Fatalf("break of a freshly renewed lease = %v, want refused (409)", err)
	}
	rep, err := h.client.BreakLease(ctx, false, true, "ops")
	if err != nil {
		t.Fatalf("break --force: %v", err)
	}
	if rep.Broken.ID != l.ID || rep.Recovery == nil || rep.Recovery.State != agentapi.RecoveryRestored || rep.Recovery.Version != "v1" {
		t.Errorf("break report = %+v (recovery %+v), want %s broken and the host restored to v1", rep, rep.Recovery, l.ID)
	}
	if _, err := h.client.Publish(ctx, l.ID, h.def("v3", nil)); !errors.Is(err, agentapi.ErrNoLease) {
		t.Errorf("the broken lease still works: %v", err)
	}
}

// A deploy that gives up on a host it left half deployed (its rollback
// failed, or it released without one) does not leave the host to rot: the
// release runs the recovery an expiry would.
func TestAgent_ReleaseOfHalfDeployedHostRecovers(t *testing.T) {
	t.Parallel()
	h := newTestHost(t)
	ctx := ctxT(t)
	h.deployGood(t, ctx, "v1")
	if st, _ := h.client.Status(ctx); st.Recovery != nil {
		t.Fatalf("a release of a whole host ran a recovery: %+v", st.Recovery)
	}
	l, _ := h.client.AcquireLease(ctx, false, "giving-up deploy", time.Minute)
	if _, err := h.client.Publish(ctx, l.ID, h.def("v2", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Stop(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.client.ReleaseLease(ctx, false, l.ID); err != nil {
		t.Fatal(err)
	}
	st := h.waitStatus(t, ctx, "recovered after the release", func(st agentapi.Status) bool {
		return st.Recovery != nil && st.Recovery.State != agentapi.RecoveryRunning && st.LockHolder == ""
	})
	if st.Recovery.State != agentapi.RecoveryRestored || st.Recovery.Version != "v1" || !st.Restore.Restored {
		t.Errorf("recovery %+v, restore %+v; want back on v1, restored", st.Recovery, st.Restore)
	}
}

// `mythex agent bootstrap` at boot, with a deploy's lease on disk and its
// definition half deployed: it starts nothing and leaves the lease for the
// agent (which can put the host back into the load balancer).
func TestAgent_BootstrapLeavesHalfDeployedHostToTheAgent(t *testing.T) {
	t.Parallel()
	h := newTestHost(t)
	ctx := ctxT(t)
	h.deployGood(t, ctx, "v1")
	l, _ := h.client.AcquireLease(ctx, false, "deploy v2", time.Minute)
	if _, err := h.client.Publish(ctx, l.ID, h.def("v2", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.Stop(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	h.restart(t, func(c *Config) { c.KeepLeasesOnDisk = true })
	if _, err := h.agent.Bootstrap(ctx); !errors.Is(err, ErrHalfDeployed) {
		t.Fatalf("bootstrap of a half-deployed host = %v, want ErrHalfDeployed", err)
	}
	if st, _ := h.client.Status(ctx); st.Lease != nil || anyRunning(st) {
		t.Errorf("bootstrap resumed the lease or started something: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(h.cfg.StateDir, hostLeaseFile)); err != nil {
		t.Errorf("the lease file is gone after the bootstrap: %v", err)
	}
	// The agent then resumes it.
	h.restart(t, func(c *Config) { c.KeepLeasesOnDisk = false })
	if st, _ := h.client.Status(ctx); st.Lease == nil || st.Lease.ID != l.ID {
		t.Errorf("the agent did not resume the lease: %+v", st.Lease)
	}
}

func anyRunning(st agentapi.Status) bool {
	for _, s := range st.Services {
		if s.Running {
			return true
		}
	}
	return false
}

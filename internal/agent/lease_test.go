package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/hostlock"
)

func newTestKeeper(t *testing.T, onExpire func(Lease)) (*leaseKeeper, *clockwork.FakeClock, string) {
	t.Helper()
	dir := t.TempDir()
	clock := clockwork.NewFakeClock()
	return &leaseKeeper{
		clock: clock, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		lock: hostlock.New(dir), kind: "host",
		onExpire: func(r leaseRecord) error {
			if onExpire != nil {
				onExpire(r.Lease)
			}
			return nil
		},
	}, clock, dir
}

func TestLeaseKeeper_AcquireExcludes(t *testing.T) {
	t.Parallel()
	k, _, dir := newTestKeeper(t, nil)
	l, err := k.acquire("deploy v2", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.acquire("deploy v3", 30*time.Second); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("second acquire = %v, want ErrLeaseHeld", err)
	}
	if err := hostlock.New(dir).TryLock("watchdog"); !errors.Is(err, hostlock.ErrHeld) {
		t.Fatalf("host lock while leased = %v, want held", err)
	}
	if err := k.release(l.ID); err != nil {
		t.Fatal(err)
	}
	if h := hostlock.Holder(dir); h != "" {
		t.Errorf("host lock still held by %q after release", h)
	}
}

func TestLeaseKeeper_HostLockHeldByBootstrap(t *testing.T) {
	t.Parallel()
	k, _, dir := newTestKeeper(t, nil)
	boot := hostlock.New(dir)
	if err := boot.TryLock("bootstrap"); err != nil {
		t.Fatal(err)
	}
	defer boot.Unlock()
	_, err := k.acquire("deploy", time.Minute)
	if !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("acquire = %v, want ErrLeaseHeld", err)
	}
}

func TestLeaseKeeper_RenewAndCheck(t *testing.T) {
	t.Parallel()
	k, clock, _ := newTestKeeper(t, nil)
	l, _ := k.acquire("deploy", 10*time.Second)
	clock.Advance(8 * time.Second)
	if _, err := k.renew(l.ID, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(8 * time.Second) // 16s after acquire, 8s after renew
	if err := k.check(l.ID); err != nil {
		t.Fatalf("check after renew = %v", err)
	}
	if err := k.check("forged"); !errors.Is(err, ErrNoLease) {
		t.Errorf("check(forged) = %v", err)
	}
	if _, err := k.renew("forged", time.Second); !errors.Is(err, ErrNoLease) {
		t.Errorf("renew(forged) = %v", err)
	}
	if err := k.release("forged"); !errors.Is(err, ErrNoLease) {
		t.Errorf("release(forged) = %v", err)
	}
}

func TestLeaseKeeper_ExpiryRunsRecoveryWithLockHeld(t *testing.T) {
	t.Parallel()
	var recovered atomic.Int32
	var dir string
	lockHeldDuringRecovery := make(chan bool, 1)
	k, clock, d := newTestKeeper(t, func(l Lease) {
		recovered.Add(1)
		lockHeldDuringRecovery <- hostlock.Holder(dir) != ""
	})
	dir = d
	l, _ := k.acquire("deploy v2", 10*time.Second)
	clock.Advance(9 * time.Second)
	if recovered.Load() != 0 {
		t.Fatal("recovery ran before the ttl")
	}
	clock.Advance(time.Second)
	select {
	case held := <-lockHeldDuringRecovery:
		if !held {
			t.Error("host lock was free during recovery")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("recovery did not run at the ttl")
	}
	if err := k.check(l.ID); !errors.Is(err, ErrNoLease) {
		t.Errorf("check after expiry = %v, want ErrNoLease", err)
	}
	waitFor(t, func() bool { return hostlock.Holder(dir) == "" }, "host lock released after recovery")
	if _, err := k.acquire("deploy v3", time.Second); err != nil {
		t.Errorf("acquire after expiry = %v", err)
	}
	if n := recovered.Load(); n != 1 {
		t.Errorf("recovery ran %d times, want 1", n)
	}
}

func TestLeaseKeeper_ReleasedLeaseNeverExpires(t *testing.T) {
	t.Parallel()
	var recovered atomic.Int32
	k, clock, _ := newTestKeeper(t, func(Lease) { recovered.Add(1) })
	l, _ := k.acquire("deploy", time.Second)
	if err := k.release(l.ID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if recovered.Load() != 0 {
		t.Error("a released lease ran recovery")
	}
}

func TestLeaseKeeper_FleetLeaseHasNoLock(t *testing.T) {
	t.Parallel()
	k := &leaseKeeper{clock: clockwork.NewFakeClock(), log: slog.New(slog.NewTextHandler(io.Discard, nil)), kind: "fleet"}
	if _, err := k.acquire("deploy a", time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err := k.acquire("deploy b", time.Minute)
	if !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("second fleet lease = %v", err)
	}
}

// waitFor polls cond until it holds or 5s pass.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A recovery that fails is tried again, with backoff, until it succeeds; a
// new lease stops the retries (its deploy owns the host).
func TestLeaseKeeper_FailedRecoveryIsRetried(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	k, clock, dir := newTestKeeper(t, nil)
	k.onExpire = func(leaseRecord) error {
		if calls.Add(1) < 3 {
			return errors.New("load balancer unreachable")
		}
		return nil
	}
	k.store = leaseStoreIn(dir, hostLeaseFile, nil)
	if _, err := k.acquire("dying deploy", time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	waitFor(t, func() bool { return calls.Load() == 1 && hostlock.Holder(dir) == "" }, "the first recovery")
	rec, ok, err := k.store.read()
	if err != nil || !ok || !rec.Expired || rec.RecoveryError == "" {
		t.Fatalf("lease file after a failed recovery = %+v, %v, %v; want expired with the error", rec, ok, err)
	}
	_ = clock.BlockUntilContext(context.Background(), 1)
	clock.Advance(recoveryRetryMin)
	waitFor(t, func() bool { return calls.Load() == 2 }, "the first retry")
	waitFor(t, func() bool { return hostlock.Holder(dir) == "" }, "the lock free after the retry")
	_ = clock.BlockUntilContext(context.Background(), 1)
	clock.Advance(2 * recoveryRetryMin)
	waitFor(t, func() bool { return calls.Load() == 3 }, "the second retry")
	waitFor(t, func() bool { _, ok, _ := k.store.read(); return !ok }, "the lease file gone after the recovery succeeded")
	clock.Advance(time.Hour)
	if n := calls.Load(); n != 3 {
		t.Errorf("recovery ran %d times, want 3", n)
	}
}

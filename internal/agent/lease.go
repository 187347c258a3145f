package agent

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mythex/mythex/internal/hostlock"
)

// Lease errors. The API maps ErrLeaseHeld to 409 Conflict and the others to
// 412 Precondition Failed.
var (
	// ErrLeaseHeld: another holder has the lease (or the host lock is held by
	// the bootstrap or a recovery); the error names the holder.
	ErrLeaseHeld = errors.New("lease is held")
	// ErrNoLease: the request named a lease that does not exist (it expired or
	// was released).
	ErrNoLease = errors.New("no such lease")
)

// ErrLeaseRenewed: a break of a lease whose holder is still renewing it was
// refused (HTTP 409); --force breaks it anyway.
var ErrLeaseRenewed = errors.New("lease is being renewed by its holder")

// MaxLeaseTTL is the longest lease an agent grants: a lease outlives its
// deploy by at most this long when the deploy dies, so the host waits at most
// this long for its recovery.
const MaxLeaseTTL = time.Hour

// Lease is a time-limited claim on a host (or on the fleet) by one deploy.
type Lease struct {
	// ID is the opaque token the holder presents with every mutating request.
	ID string `json:"id"`
	// Holder names who holds it (e.g. "deploy v2 by alice@ci").
	Holder string `json:"holder"`
	// Acquired is when it was taken.
	Acquired time.Time `json:"acquired"`
	// Expires is when it lapses unless renewed (wall clock, for display: the
	// agent times the lease on the monotonic clock, and across its own
	// restarts on the time since boot; see remainingAfterRestart).
	Expires time.Time `json:"expires"`
}

// leaseKeeper holds at most one lease at a time. A host lease also holds the
// host lock for its whole life, and when it expires (the deploy died) onExpire
// runs with the lock still held, so nothing else acts on the host while it is
// returned to its last good state; only then is the lock released. The fleet
// lease has neither lock nor onExpire: it only keeps a second deploy out.
//
// With a store, every change is persisted before it is acknowledged (acquire
// fails when the lease cannot be written), and resume picks the lease up
// again after an agent restart: its clock goes on, and a lease that ran out
// while no agent ran is recovered at once.
type leaseKeeper struct {
	clock clockwork.Clock
	log   *slog.Logger
	lock  *hostlock.Lock // nil for the fleet lease
	// onExpire returns the host to a verified definition after the lease
	// rec ended without release, with the host lock held; nil for the fleet
	// lease.
	onExpire func(rec leaseRecord) error
	kind     string // "host" or "fleet", for messages
	// store persists the lease; zero: memory only.
	store leaseStore
	// restoreOf says, at acquire, what to return the host to if the lease
	// expires; nil for the fleet lease.
	restoreOf func() *restoreTarget
	// halfDone reports, at release, that the holder leaves the host half
	// deployed (its current definition never ran whole here): the release
	// then runs the same recovery as an expiry, in the background through
	// spawn, with the host lock kept. nil for the fleet lease.
	halfDone func() bool
	// spawn runs the keeper's background work — an expiry and its
	// recovery, a retry — on the agent's background (Agent.Close waits for
	// it) and reports false, running nothing, once the agent is closing;
	// nil runs it on the timer's goroutine.
	spawn func(func()) bool

	mu    sync.Mutex
	cur   *leaseRecord
	timer clockwork.Timer
	gen   uint64
	// recovering is set while onExpire runs (for status).
	recovering *leaseRecord
	// retry is the timer of the next try of a failed recovery; closed stops
	// retrying (shutdown).
	retry  clockwork.Timer
	closed bool
}

// Retries of a failed recovery: after recoveryRetryMin, doubling, at most
// recoveryRetryMax apart, until one succeeds or a new lease is taken (the
// new deploy then owns the host).
const (
	recoveryRetryMin = time.Second
	recoveryRetryMax = time.Minute
)

// acquire takes the lease for holder for ttl. It fails with ErrLeaseHeld
// (naming the holder) when a lease is held or the host lock is taken, and
// with the write error when the lease cannot be persisted (nothing held).
func (k *leaseKeeper) acquire(holder string, ttl time.Duration) (Lease, error) {
	if ttl <= 0 || ttl > MaxLeaseTTL {
		return Lease{}, fmt.Errorf("%w: lease ttl must be more than 0 and at most %v, got %v", ErrInvalid, MaxLeaseTTL, ttl)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cur != nil {
		return Lease{}, fmt.Errorf("%s %w by %q until %s", k.kind, ErrLeaseHeld, k.cur.Holder, k.cur.Expires.Format(time.RFC3339))
	}
	if k.lock != nil {
		if err := k.lock.TryLock("deploy: " + holder); err != nil {
			if errors.Is(err, hostlock.ErrHeld) {
				return Lease{}, fmt.Errorf("%s %w: %v", k.kind, ErrLeaseHeld, err)
			}
			return Lease{}, err
		}
	}
	now := k.clock.Now()
	rec := &leaseRecord{
		Lease: Lease{ID: newID(), Holder: holder, Acquired: now, Expires: now.Add(ttl)},
		TTL:   ttl, Renewed: now,
	}
	if k.restoreOf != nil {
		rec.Restore = k.restoreOf()
	}
	if err := k.store.write(*rec, now, ttl); err != nil {
		if k.lock != nil {
			_ = k.lock.Unlock()
		}
		return Lease{}, fmt.Errorf("%s lease not granted: %w (the agent must be able to write its state directory)", k.kind, err)
	}
	k.cur = rec
	k.arm(ttl)
	if k.retry != nil {
		// A new deploy owns the host now; a failed recovery is its to fix.
		k.retry.Stop()
	}
	k.log.Info("lease acquired", "kind", k.kind, "holder", holder, "ttl", ttl)
	return rec.Lease, nil
}

// renew extends lease id to now+ttl.
func (k *leaseKeeper) renew(id string, ttl time.Duration) (Lease, error) {
	if ttl <= 0 || ttl > MaxLeaseTTL {
		return Lease{}, fmt.Errorf("%w: lease ttl must be more than 0 and at most %v, got %v", ErrInvalid, MaxLeaseTTL, ttl)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.checkLocked(id); err != nil {
		return Lease{}, err
	}
	now := k.clock.Now()
	k.cur.Expires, k.cur.TTL, k.cur.Renewed = now.Add(ttl), ttl, now
	k.arm(ttl)
	if err := k.store.write(*k.cur, now, ttl); err != nil {
		// The lease on disk is older, so it would expire sooner after a
		// restart: the safe side. The holder keeps its lease.
		k.log.Warn("lease renewed but not persisted", "kind", k.kind, "err", err)
	}
	return k.cur.Lease, nil
}

// release ends lease id and frees the host lock.
func (k *leaseKeeper) release(id string) error {
	k.mu.Lock()
	if err := k.checkLocked(id); err != nil {
		k.mu.Unlock()
		return err
	}
	if k.halfDone != nil && k.onExpire != nil && k.spawn != nil && k.halfDone() {
		// The deploy gave up on a host it left half deployed (its rollback
		// failed, or it never tried): the host is recovered as if the
		// lease had run out, before anyone else may act on it.
		rec := k.takeLocked("released with the host half deployed")
		k.mu.Unlock()
		k.log.Warn("lease released with the host half deployed; recovering the host", "holder", rec.Holder, "step", rec.Step)
		if !k.spawn(func() { _ = k.recoverAndUnlock(rec) }) && k.lock != nil {
			// The agent is closing: the expired record stays on disk and
			// the next agent recovers the host (resume).
			_ = k.lock.Unlock()
		}
		return nil
	}
	k.timer.Stop()
	holder := k.cur.Holder
	k.cur = nil
	k.gen++
	rmErr := k.store.remove()
	k.mu.Unlock()
	if rmErr != nil {
		// A leftover file would resume a released lease after a restart and
		// then recover a host that needs nothing; say so loudly.
		k.log.Error("lease released but its file could not be removed; an agent restart would resume it", "kind", k.kind, "err", rmErr)
	}
	k.log.Info("lease released", "kind", k.kind, "holder", holder)
	if k.lock != nil {
		return k.lock.Unlock()
	}
	return nil
}

// setStep records the operation the holder runs on the host (persisted: an
// agent that restarts knows what was in progress).
func (k *leaseKeeper) setStep(step, state string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.setStepLocked(step, state)
}

// setStepLocked is setStep with k.mu held.
func (k *leaseKeeper) setStepLocked(step, state string) {
	if k.cur == nil {
		return
	}
	k.cur.Step, k.cur.StepState = step, state
	now := k.clock.Now()
	if err := k.store.write(*k.cur, now, max(k.cur.Expires.Sub(now), 0)); err != nil {
		k.log.Warn("lease step not persisted", "step", step, "err", err)
	}
}

// commit records on lease id that the whole fleet passed the deploy's final
// sweep on target. It is persisted before it is acknowledged: a commit the
// disk refused is not recorded, and its error is returned.
func (k *leaseKeeper) commit(id string, target restoreTarget) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.checkLocked(id); err != nil {
		return err
	}
	now := k.clock.Now()
	rec := *k.cur
	rec.Committed = &target
	if err := k.store.write(rec, now, max(rec.Expires.Sub(now), 0)); err != nil {
		return fmt.Errorf("commit not recorded: %w", err)
	}
	k.cur.Committed = &target
	return nil
}

// beginStep checks that id is the live lease and records step as running
// on it, in one hold of k.mu: a lease that ends after the check is recorded
// as ending in this step (its recovery then knows what was in progress).
func (k *leaseKeeper) beginStep(id, step string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.checkLocked(id); err != nil {
		return err
	}
	k.setStepLocked(step, stepRunning)
	return nil
}

// check reports whether id is the live lease: nil, or ErrNoLease wrapped.
func (k *leaseKeeper) check(id string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.checkLocked(id)
}

func (k *leaseKeeper) checkLocked(id string) error {
	if k.cur == nil || k.cur.ID != id || id == "" {
		return fmt.Errorf("%s %w (it expired or was released; take a new one)", k.kind, ErrNoLease)
	}
	return nil
}

// current returns the live lease, if any.
func (k *leaseKeeper) current() (Lease, bool) {
	r, ok := k.currentRecord()
	return r.Lease, ok
}

// currentRecord returns the live lease with its bookkeeping, if any.
func (k *leaseKeeper) currentRecord() (leaseRecord, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cur == nil {
		return leaseRecord{}, false
	}
	return *k.cur, true
}

// arm (re)starts the expiry timer; k.mu is held.
func (k *leaseKeeper) arm(ttl time.Duration) {
	if k.timer != nil {
		k.timer.Stop()
	}
	k.gen++
	gen := k.gen
	k.timer = k.clock.AfterFunc(ttl, func() { k.background(func() { k.expire(gen) }) })
}

// background runs f through spawn, or at once when the keeper has none. A
// timer's callback goes through it: an expiry that fires as the agent closes
// does not run, and its lease stays on disk for the next agent.
func (k *leaseKeeper) background(f func()) {
	if k.spawn == nil {
		f()
		return
	}
	k.spawn(f)
}

// expire ends the lease armed as gen if it is still the live one, runs the
// recovery with the host lock held, then releases the lock.
func (k *leaseKeeper) expire(gen uint64) {
	k.mu.Lock()
	if k.cur == nil || k.gen != gen {
		k.mu.Unlock()
		return
	}
	rec := k.takeLocked("expired")
	k.mu.Unlock()
	k.log.Warn("lease expired; the deploy holding it is gone", "kind", k.kind, "holder", rec.Holder)
	_ = k.recoverAndUnlock(rec)
}

// takeLocked ends the live lease and marks it expired on disk, so that an
// agent killed during the recovery runs it again; k.mu is held.
func (k *leaseKeeper) takeLocked(reason string) leaseRecord {
	rec := *k.cur
	rec.EndReason = reason
	k.cur = nil
	k.gen++
	if k.timer != nil {
		k.timer.Stop()
	}
	rec.Expired = true
	if k.onExpire != nil {
		if err := k.store.write(rec, k.clock.Now(), 0); err != nil {
			k.log.Error("lease expired; could not persist that its recovery is due", "err", err)
		}
		k.recovering = &rec
	} else if err := k.store.remove(); err != nil {
		k.log.Error("remove expired lease file", "kind", k.kind, "err", err)
	}
	return rec
}

// recoverAndUnlock runs onExpire for the ended lease rec (the host lock is
// held), records how it went and releases the lock. A failed recovery stays
// on disk: the next agent start tries again.
func (k *leaseKeeper) recoverAndUnlock(rec leaseRecord) (err error) {
	if k.onExpire != nil {
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("recovery panicked: %v", r)
					k.log.Error("lease recovery panicked", "panic", r)
				}
			}()
			err = k.onExpire(rec)
		}()
		k.mu.Lock()
		k.recovering = nil
		if err != nil {
			rec.RecoveryError = err.Error()
			rec.RecoveryAttempts++
			if werr := k.store.write(rec, k.clock.Now(), 0); werr != nil {
				k.log.Error("record the failed recovery", "err", werr)
			}
			k.scheduleRetryLocked(rec)
		} else if rmErr := k.store.remove(); rmErr != nil {
			k.log.Error("remove recovered lease file", "err", rmErr)
		}
		k.mu.Unlock()
	}
	if k.lock != nil {
		if uerr := k.lock.Unlock(); uerr != nil {
			k.log.Error("release host lock after lease expiry", "err", uerr)
		}
	}
	return err
}

// scheduleRetryLocked arms the next try of rec's failed recovery; k.mu is
// held.
func (k *leaseKeeper) scheduleRetryLocked(rec leaseRecord) {
	if k.closed {
		return
	}
	delay := recoveryRetryMin
	for range min(rec.RecoveryAttempts-1, 10) {
		delay = min(2*delay, recoveryRetryMax)
	}
	if k.retry != nil {
		k.retry.Stop()
	}
	k.log.Warn("recovery failed; trying again", "holder", rec.Holder, "attempt", rec.RecoveryAttempts, "in", delay, "err", rec.RecoveryError)
	k.retry = k.clock.AfterFunc(delay, func() { k.background(func() { k.retryRecovery(rec) }) })
}

// retryRecovery tries rec's recovery again, unless a new lease was taken
// meanwhile (its deploy owns the host now) or the agent is closing. While
// the host lock is held (a watchdog round, the bootstrap) it waits for the
// next try.
func (k *leaseKeeper) retryRecovery(rec leaseRecord) {
	k.mu.Lock()
	if k.closed || k.cur != nil || k.recovering != nil {
		k.mu.Unlock()
		return
	}
	if k.lock != nil {
		if err := k.lock.TryLock("deploy: " + rec.Holder); err != nil {
			k.scheduleRetryLocked(rec)
			k.mu.Unlock()
			return
		}
	}
	k.recovering = &rec
	k.mu.Unlock()
	_ = k.recoverAndUnlock(rec)
}

// breakLease ends the live lease now, as if it had expired — the host lease's
// recovery runs before it returns — and returns the lease it broke and the
// recovery's error. Without force it refuses (ErrLeaseRenewed) while the
// holder still renews: renewed within the last half of its TTL (a live
// deploy renews every third). ErrNoLease when none is held.
func (k *leaseKeeper) breakLease(force bool, by string) (broken Lease, recoveryErr, err error) {
	k.mu.Lock()
	if k.cur == nil {
		k.mu.Unlock()
		return Lease{}, nil, fmt.Errorf("%s %w: nothing to break", k.kind, ErrNoLease)
	}
	now := k.clock.Now()
	if since := now.Sub(k.cur.Renewed); !force && since < k.cur.TTL/2 {
		l, ttl := k.cur.Lease, k.cur.TTL
		k.mu.Unlock()
		return Lease{}, nil, fmt.Errorf("%s %w: %q renewed it %v ago (ttl %v): its holder looks alive; stop that deploy first, or break it with --force",
			k.kind, ErrLeaseRenewed, l.Holder, since.Round(time.Millisecond), ttl)
	}
	rec := k.takeLocked("broken by " + orSomeone(by))
	k.mu.Unlock()
	k.log.Warn("lease broken", "kind", k.kind, "holder", rec.Holder, "by", by, "force", force)
	return rec.Lease, k.recoverAndUnlock(rec), nil
}

// shutdown stops the expiry timer and lets go of the host lock without
// ending the lease: it stays on disk, for the next agent to resume (what
// happens when the agent process dies, done in order).
func (k *leaseKeeper) shutdown() {
	k.mu.Lock()
	k.closed = true
	if k.retry != nil {
		k.retry.Stop()
	}
	if k.timer != nil {
		k.timer.Stop()
	}
	k.gen++
	held := k.cur != nil
	k.mu.Unlock()
	if held && k.lock != nil {
		_ = k.lock.Unlock()
	}
}

// resume picks up the lease a previous agent left in the store. A live one
// is held again (with the host lock) for what is left of it; one that ran
// out — while no agent ran, or whose recovery did not finish — is returned
// as due with the host lock held: the caller runs recoverDue for it.
func (k *leaseKeeper) resume(bootID string, sinceBoot time.Duration) (due *leaseRecord, err error) {
	rec, ok, err := k.store.read()
	if err != nil || !ok {
		return nil, err
	}
	now := k.clock.Now()
	left, how := remainingAfterRestart(rec, now, bootID, sinceBoot)
	if k.lock != nil {
		if err := k.lock.TryLock("deploy: " + rec.Holder); err != nil {
			return nil, fmt.Errorf("resume %s lease of %q: %w", k.kind, rec.Holder, err)
		}
	}
	if rec.Expired || left <= 0 {
		if k.onExpire == nil {
			k.log.Info("lease ran out while the agent was down", "kind", k.kind, "holder", rec.Holder, "clock", how)
			if err := k.store.remove(); err != nil {
				k.log.Error("remove expired lease file", "kind", k.kind, "err", err)
			}
			return nil, nil
		}
		k.log.Warn("lease ran out while the agent was down; recovering the host", "kind", k.kind, "holder", rec.Holder, "clock", how, "step", rec.Step)
		rec.Expired = true
		if rec.EndReason == "" {
			rec.EndReason = "ran out while the agent was down"
		}
		k.mu.Lock()
		k.recovering = &rec
		k.mu.Unlock()
		return &rec, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	rec.Expires = now.Add(left)
	k.cur = &rec
	k.arm(left)
	if err := k.store.write(rec, now, left); err != nil {
		k.log.Warn("resumed lease not persisted", "err", err)
	}
	k.log.Info("lease resumed after an agent restart", "kind", k.kind, "holder", rec.Holder, "left", left, "clock", how, "step", rec.Step, "step_state", rec.StepState)
	return nil, nil
}

// recovery returns the lease whose recovery runs now, if any.
func (k *leaseKeeper) recoveryRunning() (leaseRecord, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.recovering == nil {
		return leaseRecord{}, false
	}
	return *k.recovering, true
}

func orSomeone(s string) string {
	if s == "" {
		return "an operator"
	}
	return s
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}

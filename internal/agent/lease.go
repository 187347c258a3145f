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

// Lease is a time-limited claim on a host (or on the fleet) by one deploy.
type Lease struct {
	// ID is the opaque token the holder presents with every mutating request.
	ID string `json:"id"`
	// Holder names who holds it (e.g. "deploy v2 by alice@ci").
	Holder string `json:"holder"`
	// Acquired is when it was taken.
	Acquired time.Time `json:"acquired"`
	// Expires is when it lapses unless renewed.
	Expires time.Time `json:"expires"`
}

// leaseKeeper holds at most one lease at a time. A host lease also holds the
// host lock for its whole life, and when it expires (the deploy died) onExpire
// runs with the lock still held, so nothing else acts on the host while it is
// returned to its last good state; only then is the lock released. The fleet
// lease has neither lock nor onExpire: it only keeps a second deploy out.
type leaseKeeper struct {
	clock    clockwork.Clock
	log      *slog.Logger
	lock     *hostlock.Lock // nil for the fleet lease
	onExpire func(Lease)    // nil for the fleet lease
	kind     string         // "host" or "fleet", for messages

	mu    sync.Mutex
	cur   *Lease
	timer clockwork.Timer
	gen   uint64
}

// acquire takes the lease for holder for ttl. It fails with ErrLeaseHeld
// (naming the holder) when a lease is held or the host lock is taken.
func (k *leaseKeeper) acquire(holder string, ttl time.Duration) (Lease, error) {
	if ttl <= 0 {
		return Lease{}, fmt.Errorf("lease ttl must be more than 0, got %v", ttl)
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
	l := &Lease{ID: newID(), Holder: holder, Acquired: now, Expires: now.Add(ttl)}
	k.cur = l
	k.arm(ttl)
	k.log.Info("lease acquired", "kind", k.kind, "holder", holder, "ttl", ttl)
	return *l, nil
}

// renew extends lease id to now+ttl.
func (k *leaseKeeper) renew(id string, ttl time.Duration) (Lease, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.checkLocked(id); err != nil {
		return Lease{}, err
	}
	k.cur.Expires = k.clock.Now().Add(ttl)
	k.arm(ttl)
	return *k.cur, nil
}

// release ends lease id and frees the host lock.
func (k *leaseKeeper) release(id string) error {
	k.mu.Lock()
	if err := k.checkLocked(id); err != nil {
		k.mu.Unlock()
		return err
	}
	k.timer.Stop()
	holder := k.cur.Holder
	k.cur = nil
	k.gen++
	k.mu.Unlock()
	k.log.Info("lease released", "kind", k.kind, "holder", holder)
	if k.lock != nil {
		return k.lock.Unlock()
	}
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
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cur == nil {
		return Lease{}, false
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
	k.timer = k.clock.AfterFunc(ttl, func() { k.expire(gen) })
}

// expire ends the lease armed as gen if it is still the live one, runs the
// recovery with the host lock held, then releases the lock.
func (k *leaseKeeper) expire(gen uint64) {
	k.mu.Lock()
	if k.cur == nil || k.gen != gen {
		k.mu.Unlock()
		return
	}
	l := *k.cur
	k.cur = nil
	k.gen++
	k.mu.Unlock()
	k.log.Warn("lease expired; the deploy holding it is gone", "kind", k.kind, "holder", l.Holder)
	if k.onExpire != nil {
		func() {
			defer func() {
				if r := recover(); r != nil {
					k.log.Error("lease recovery panicked", "panic", r)
				}
			}()
			k.onExpire(l)
		}()
	}
	if k.lock != nil {
		if err := k.lock.Unlock(); err != nil {
			k.log.Error("release host lock after lease expiry", "err", err)
		}
	}
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}

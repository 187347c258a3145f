package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mythex/mythex/internal/atomicfile"
)

// Lease files in the agent's state directory: the lease as it was at its last
// change, so that an agent that restarts (even after SIGKILL) resumes it.
const (
	hostLeaseFile  = "lease-host.json"
	fleetLeaseFile = "lease-fleet.json"
)

// leaseRecord is a lease as persisted. Its clock survives the agent: at every
// write it records the TTL left (Remaining) together with two clocks — the
// wall clock (WrittenAt) and the time since boot (BootID, SinceBoot) — and on
// restart remainingAfterRestart decides how much is left (see there for how a
// clock that jumped is treated).
type leaseRecord struct {
	Lease
	// TTL is the lease's time to live at its last acquire or renew.
	TTL time.Duration `json:"ttl"`
	// Renewed is when it was last acquired or renewed (wall clock).
	Renewed time.Time `json:"renewed"`
	// Remaining is the TTL left at WrittenAt.
	Remaining time.Duration `json:"remaining"`
	// WrittenAt is the wall-clock time of this write.
	WrittenAt time.Time `json:"written_at"`
	// BootID is the kernel's boot id (/proc/sys/kernel/random/boot_id) at
	// this write; SinceBoot is CLOCK_BOOTTIME then (it counts suspend and
	// never jumps with the wall clock).
	BootID    string        `json:"boot_id,omitempty"`
	SinceBoot time.Duration `json:"since_boot,omitempty"`
	// Step is the deploy's operation in progress or last done on the host
	// ("publish", "drain", "stop", "start", "rollback", "commit",
	// "mark-good"), with
	// StepState "running", "done" or "failed".
	Step      string `json:"step,omitempty"`
	StepState string `json:"step_state,omitempty"`
	// Restore is the definition the host returns to when the lease expires:
	// the last known good at acquire time, else what was current then.
	Restore *restoreTarget `json:"restore,omitempty"`
	// Committed is the definition the whole fleet passed the deploy's final
	// sweep on, recorded by its commit step (before any host is marked
	// good): a recovery of a committed lease completes the release when
	// that definition is still current, instead of restoring Restore.
	Committed *restoreTarget `json:"committed,omitempty"`
	// Expired is set once the lease has run out (or was broken): the
	// recovery is due, and an agent that restarts runs it again until it
	// succeeds. RecoveryError is its last failure.
	Expired          bool   `json:"expired,omitempty"`
	RecoveryError    string `json:"recovery_error,omitempty"`
	RecoveryAttempts int    `json:"recovery_attempts,omitempty"`
	// EndReason says how it ended: "expired", "broken by …", "ran out while
	// the agent was down".
	EndReason string `json:"end_reason,omitempty"`
}

// restoreTarget names a definition to return to.
type restoreTarget struct {
	Version string `json:"version"`
	Hash    string `json:"hash"`
}

// BootClock reads the kernel's boot id and the time since boot
// (CLOCK_BOOTTIME). Leases use it to measure how long an agent was gone
// without trusting the wall clock. LinuxBootClock is the real one.
type BootClock interface {
	Boot() (id string, since time.Duration, err error)
}

// LinuxBootClock is the BootClock of the running Linux kernel.
type LinuxBootClock struct{}

// Boot reads /proc/sys/kernel/random/boot_id and CLOCK_BOOTTIME.
func (LinuxBootClock) Boot() (string, time.Duration, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", 0, err
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return "", 0, err
	}
	return strings.TrimSpace(string(b)), time.Duration(ts.Nano()), nil
}

// restartClock is how remainingAfterRestart measured the time the agent was
// gone, for logs and tests.
type restartClock string

const (
	// clockBoot: same boot, measured on CLOCK_BOOTTIME (wall-clock jumps do
	// not matter).
	clockBoot restartClock = "since-boot"
	// clockWall: another boot (or no boot clock): measured on the wall clock.
	clockWall restartClock = "wall"
	// clockWallBackwards: the wall clock reads earlier than the record was
	// written; the time gone is unknown, taken as 0, and the lease is given
	// at most its TTL more.
	clockWallBackwards restartClock = "wall-went-backwards"
)

// remainingAfterRestart decides how much of a persisted lease is left when an
// agent starts again, and by which clock it judged that. It is pure.
//
//   - Same boot: the time gone is CLOCK_BOOTTIME now minus at the write. That
//     clock only moves forwards, at the real rate, across suspend too, so a
//     wall clock stepped by NTP or by hand in between changes nothing.
//   - Another boot (the machine restarted; the boot clock started again):
//     only the wall clock is left. Gone = now − WrittenAt. If that is
//     negative the wall clock went backwards: the time gone is unknown and
//     taken as 0 — the lease keeps what it had, never more than its TTL —
//     because the holder, if still alive, renews it anyway, and if dead the
//     host is recovered at most one TTL later. A wall clock that jumped
//     forwards makes the lease expire early: the recovery runs sooner,
//     which is the safe side (a live holder's next call is refused and
//     changes nothing).
//
// The result is clamped to [0, TTL]; 0 means expired: recover now.
func remainingAfterRestart(rec leaseRecord, now time.Time, bootID string, sinceBoot time.Duration) (time.Duration, restartClock) {
	left := min(rec.Remaining, rec.TTL)
	var gone time.Duration
	how := clockWall
	switch {
	case bootID != "" && rec.BootID == bootID && sinceBoot >= rec.SinceBoot:
		gone, how = sinceBoot-rec.SinceBoot, clockBoot
	default:
		gone = now.Sub(rec.WrittenAt)
		if gone < 0 {
			gone, how = 0, clockWallBackwards
		}
	}
	return max(left-gone, 0), how
}

// leaseStore reads and writes one lease file. A zero path persists nothing
// (tests of the keeper alone).
type leaseStore struct {
	path string
	boot BootClock
}

func (s leaseStore) enabled() bool { return s.path != "" }

// write persists rec, stamping both clocks; remaining is the TTL left now.
func (s leaseStore) write(rec leaseRecord, now time.Time, remaining time.Duration) error {
	if !s.enabled() {
		return nil
	}
	rec.WrittenAt, rec.Remaining = now, remaining
	rec.BootID, rec.SinceBoot = "", 0
	if s.boot != nil {
		if id, since, err := s.boot.Boot(); err == nil {
			rec.BootID, rec.SinceBoot = id, since
		}
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("persist lease: %w", err)
	}
	return nil
}

// read returns the persisted lease; ok false when there is none.
func (s leaseStore) read() (leaseRecord, bool, error) {
	var rec leaseRecord
	if !s.enabled() {
		return rec, false, nil
	}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, fmt.Errorf("read lease %s: %w", s.path, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil || rec.ID == "" {
		return rec, false, fmt.Errorf("lease file %s is damaged (%v); move it away to start without the lease", s.path, err)
	}
	return rec, true, nil
}

// remove deletes the lease file (the lease ended cleanly).
func (s leaseStore) remove() error {
	if !s.enabled() {
		return nil
	}
	return atomicfile.Remove(s.path)
}

func leaseStoreIn(stateDir, file string, boot BootClock) leaseStore {
	return leaseStore{path: filepath.Join(stateDir, file), boot: boot}
}

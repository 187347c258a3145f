package watchdog

import (
	"errors"
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// ErrInvalid marks bad input to the watchdog (a policy field, a maintenance
// request): nothing was changed. The error names the field and the fix.
var ErrInvalid = errors.New("invalid watchdog setting")

// Policy is how patient the watchdog is. Build it with PolicyFrom (from
// mythex.yml) or fill Interval and FailuresBeforeHeal and call WithDefaults.
type Policy struct {
	// Interval (W) is the time between two rounds. Fleet watchdog.interval;
	// default 60s (the write-up's "once a minute").
	Interval time.Duration
	// FailuresBeforeHeal (K) is how many consecutive failed rounds make a
	// service be healed. Fleet watchdog.failures_before_heal; default 4 (the
	// write-up's fix: four strikes, not one). At least 1.
	FailuresBeforeHeal int
	// CrashLoopAfter is how many heals in a row, without the service staying
	// up for FailuresBeforeHeal rounds in between, make it crash-looping:
	// from then on each further heal waits for a growing backoff. Default 2.
	CrashLoopAfter int
	// BackoffBase is the wait before the first heal once a service is
	// crash-looping, counted from the heal before it; each further heal in a
	// row doubles it. Default 2·K·W: twice the cadence strikes alone give.
	BackoffBase time.Duration
	// BackoffMax caps the backoff. Default 16·K·W (64 minutes with the
	// defaults).
	BackoffMax time.Duration
}

// Defaults of a Policy, from the write-up: a watchdog once a minute that
// heals after four consecutive failed checks (docs/watchdog.md).
const (
	// DefaultInterval is the default W.
	DefaultInterval = 60 * time.Second
	// DefaultFailuresBeforeHeal is the default K.
	DefaultFailuresBeforeHeal = 4
	// DefaultCrashLoopAfter is the default Policy.CrashLoopAfter.
	DefaultCrashLoopAfter = 2
)

// PolicyFrom returns the policy of a fleet's watchdog section, defaults
// applied.
func PolicyFrom(w fleet.Watchdog) Policy {
	return Policy{Interval: w.Interval, FailuresBeforeHeal: w.FailuresBeforeHeal}.WithDefaults()
}

// Override returns p with interval and failuresBeforeHeal in place of its
// own where they are not zero (flags over mythex.yml), defaults applied.
func (p Policy) Override(interval time.Duration, failuresBeforeHeal int) Policy {
	if interval != 0 {
		p.Interval = interval
	}
	if failuresBeforeHeal != 0 {
		p.FailuresBeforeHeal = failuresBeforeHeal
	}
	return p.WithDefaults()
}

// WithDefaults returns p with every zero field set to its default. Negative
// values are left for Validate to refuse.
func (p Policy) WithDefaults() Policy {
	if p.Interval == 0 {
		p.Interval = DefaultInterval
	}
	if p.FailuresBeforeHeal == 0 {
		p.FailuresBeforeHeal = DefaultFailuresBeforeHeal
	}
	if p.CrashLoopAfter == 0 {
		p.CrashLoopAfter = DefaultCrashLoopAfter
	}
	cadence := time.Duration(p.FailuresBeforeHeal) * p.Interval
	if p.BackoffBase == 0 {
		p.BackoffBase = 2 * cadence
	}
	if p.BackoffMax == 0 {
		p.BackoffMax = 16 * cadence
	}
	return p
}

// Validate reports the first field out of range, wrapped in ErrInvalid.
func (p Policy) Validate() error {
	switch {
	case p.Interval <= 0:
		return fmt.Errorf("%w: watchdog.interval is %v: it must be more than 0 (default 60s)", ErrInvalid, p.Interval)
	case p.FailuresBeforeHeal < 1:
		return fmt.Errorf("%w: watchdog.failures_before_heal is %d: it must be at least 1 (default 4)", ErrInvalid, p.FailuresBeforeHeal)
	case p.CrashLoopAfter < 1:
		return fmt.Errorf("%w: crash-loop threshold is %d: it must be at least 1 (default 2)", ErrInvalid, p.CrashLoopAfter)
	case p.BackoffBase <= 0:
		return fmt.Errorf("%w: backoff base is %v: it must be more than 0 (default 2 × K × W)", ErrInvalid, p.BackoffBase)
	case p.BackoffMax < p.BackoffBase:
		return fmt.Errorf("%w: backoff max %v is less than backoff base %v", ErrInvalid, p.BackoffMax, p.BackoffBase)
	}
	return nil
}

// Backoff is how long after a heal the next heal of the same service must
// wait, when that heal was the n-th in a row (n ≥ 1) without the service
// staying up in between: nothing beyond the K strikes while n <
// CrashLoopAfter, then BackoffBase, doubling with each further heal, capped
// at BackoffMax.
func (p Policy) Backoff(n int) time.Duration {
	if n < p.CrashLoopAfter {
		return 0
	}
	d := p.BackoffBase
	for i := p.CrashLoopAfter; i < n; i++ {
		if d >= p.BackoffMax/2 {
			return p.BackoffMax
		}
		d *= 2
	}
	return min(d, p.BackoffMax)
}

package agent

import (
	"fmt"

	"github.com/mythex/mythex/internal/definition"
)

// healable is what the agent gives its watchdog as the definition to heal
// from: the current definition, unless a deploy published it and it never
// started whole on this host (Refs.HalfDeployed: published through the API,
// not yet verified by a start). Such a definition is half deployed: the watchdog must not start it (it would run an unverified
// version and leave the host out of the load balancer while looking fine);
// the deploy itself, or the recovery of its lease, settles the host.
//
// While a deploy lease or a recovery holds the host, the current definition is
// given as is: the watchdog skips those rounds on the host lock anyway and
// only reports.
type healable struct{ a *Agent }

// errUnverified: a deploy published the current definition and it never ran
// whole on this host.
var errUnverified = fmt.Errorf("current definition not verified on this host")

// Current returns the definition the watchdog may heal from; an error
// wrapping errUnverified (naming the version) for a half-deployed one.
func (h healable) Current() (*definition.Definition, error) {
	d, err := h.a.store.Current()
	if err != nil {
		return nil, err
	}
	if _, leased := h.a.hostLease.current(); leased {
		return d, nil
	}
	if _, recovering := h.a.hostLease.recoveryRunning(); recovering {
		return d, nil
	}
	refs, err := h.a.store.Refs()
	if err != nil {
		return nil, err
	}
	if !refs.HalfDeployed() {
		return d, nil
	}
	return nil, fmt.Errorf("%w: %s (%s) was published by a deploy that never finished starting it; the watchdog heals only a verified definition and leaves this host to a deploy or `mythex lease break`",
		errUnverified, d.Version, short(d.Hash))
}

// halfDeployed reports whether a deploy published the current definition
// and it never ran whole on this host. A
// store that cannot be read counts as not half deployed: the release goes
// through, and status reports the store's error.
func (a *Agent) halfDeployed() bool {
	refs, err := a.store.Refs()
	return err == nil && refs.HalfDeployed()
}

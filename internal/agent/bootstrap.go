package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/flocks"
)

// BootstrapHolder is the name the bootstrap holds the host lock under.
const BootstrapHolder = "bootstrap"

// bootstrapPoll is how often Bootstrap tries the host lock while it is held.
const bootstrapPoll = 50 * time.Millisecond

// ErrHalfDeployed: Bootstrap found the current definition left half deployed
// by a deploy (it never ran whole on this host): it starts nothing, and
// leaves the host to the agent, which resumes the deploy's lease and
// recovers the host when the lease runs out.
var ErrHalfDeployed = errors.New("the current definition was left half deployed by a deploy")

// Bootstrap makes the current definition run, as a server does at boot: it
// takes the host lock — waiting while a deploy lease, a watchdog round or a
// recovery holds it, until ctx ends — starts every service of the current
// definition (replacing an instance of another spec), waits until each
// answers its health check (Config.StartTimeout), and releases the lock.
// Services already running the current spec are left alone. It never writes
// the definition. Errors: ErrNothingPublished when the host has no
// definition yet; ErrHalfDeployed when a deploy left it half deployed (the
// agent recovers it); ctx's error, wrapped with the lock's holder, when the lock
// stayed held; a service that exits or does not turn healthy in time.
func (a *Agent) Bootstrap(ctx context.Context) (agentapi.StartReport, error) {
	if err := a.lock.Lock(ctx, BootstrapHolder, bootstrapPoll); err != nil {
		return agentapi.StartReport{}, fmt.Errorf("bootstrap: %w", err)
	}
	defer func() {
		if err := a.lock.Unlock(); err != nil {
			a.log.Error("bootstrap: release host lock", "err", err)
		}
	}()
	a.opMu.Lock()
	defer a.opMu.Unlock()
	d, err := a.store.Current()
	if errors.Is(err, definition.ErrNotFound) {
		return agentapi.StartReport{}, ErrNothingPublished
	}
	if err != nil {
		return agentapi.StartReport{}, fmt.Errorf("bootstrap: %w", err)
	}
	if a.halfDeployed() {
		return agentapi.StartReport{}, fmt.Errorf("bootstrap %s: %w (it never ran whole on this host): starting nothing; the agent returns the host to its last good definition when the deploy's lease runs out", d.Version, ErrHalfDeployed)
	}
	a.log.Info("bootstrap: making the current definition run", "version", d.Version, "services", len(d.Services))
	rep, err := a.startDef(ctx, d)
	a.metrics.op("bootstrap", err)
	if err != nil {
		return rep, fmt.Errorf("bootstrap %s: %w", d.Version, err)
	}
	return rep, nil
}

// ErrStateDirInUse: another mythex process (an agent or a bootstrap) owns the
// state directory; the error names it.
var ErrStateDirInUse = errors.New("state directory in use")

// stateDirLockFile is the lock that says which one process runs a state
// directory's runtime: an agent for its life, or a bootstrap for its run.
// It is not the host lock: it keeps two runtimes apart (two process
// runtimes on one directory would each think they own the same children),
// where the host lock keeps actions apart.
const stateDirLockFile = "agent.lock"

// ClaimStateDir makes this process the one that runs stateDir's runtime,
// recording role ("agent", "bootstrap") and its pid for whoever finds it
// taken. Call release when done (the claim also ends with the process).
// ErrStateDirInUse, naming the holder, when another process has it.
func ClaimStateDir(stateDir, role string) (release func() error, err error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	l := flocks.New(filepath.Join(stateDir, stateDirLockFile), "state dir lock")
	var held *flocks.HeldError
	if err := l.TryLock(fmt.Sprintf("%s (pid %d)", role, os.Getpid())); errors.As(err, &held) {
		return nil, fmt.Errorf("%w: %s is run by %s", ErrStateDirInUse, stateDir, held.Holder)
	} else if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}

package agent

import (
	"context"
	"errors"

	"github.com/mythex/mythex/internal/agentapi"
)

// BootstrapResult is what `mythex agent bootstrap` reports (its --json).
type BootstrapResult struct {
	Host             string `json:"host"`
	Version          string `json:"version,omitempty"`
	NothingPublished bool   `json:"nothing_published,omitempty"`
	// HalfDeployed: a deploy left the current definition half deployed;
	// nothing was started, the agent recovers the host from its lease.
	HalfDeployed bool                   `json:"half_deployed,omitempty"`
	Services     []agentapi.StartResult `json:"services,omitempty"`
	Error        string                 `json:"error,omitempty"`
}

// BootstrapResult runs Bootstrap and says what it did on host. Nothing
// published, and a half-deployed definition, are results, not errors: the
// boot did what it should (the agent, started next, resumes the deploy's
// lease and recovers the host), so a unit ordered before the agent does not
// keep it from starting. Any other Bootstrap error is returned, and in
// Error.
func (a *Agent) BootstrapResult(ctx context.Context, host string) (BootstrapResult, error) {
	rep, err := a.Bootstrap(ctx)
	res := BootstrapResult{Host: host, Services: rep.Services}
	if d, derr := a.Store().Current(); derr == nil {
		res.Version = d.Version
	}
	switch {
	case errors.Is(err, ErrNothingPublished):
		res.NothingPublished, err = true, nil
	case errors.Is(err, ErrHalfDeployed):
		res.HalfDeployed, res.Error, err = true, err.Error(), nil
	case err != nil:
		res.Error = err.Error()
	}
	return res, err
}

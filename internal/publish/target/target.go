// Package target opens what a publish targets, by the names `mythex publish`
// is given: the machines platform (local: the daemon of `mythex publish
// local-platform`; fly: the Fly Machines API; docker: the Docker Engine) and
// the router that switches traffic (the embedded load balancer's admin API,
// Fly Proxy on Fly blue-green, or none: in place). It is to publish what
// lbport/fleetlb is to the deploy.
package target

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/lbapi"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/embedded"
	"github.com/mythex/mythex/internal/platform"
	"github.com/mythex/mythex/internal/platform/docker"
	"github.com/mythex/mythex/internal/platform/fly"
	"github.com/mythex/mythex/internal/platform/local"
	"github.com/mythex/mythex/internal/publish"
	rdocker "github.com/mythex/mythex/internal/runtime/docker"
)

// Options name the platform and the router, as the flags of `mythex publish`
// do.
type Options struct {
	// Platform is local, fly or docker.
	Platform string
	// StateDir is where the local platform's daemon announced itself.
	StateDir string
	// LocalAPI overrides the local daemon's announced URL.
	LocalAPI string
	// FlyURL and FlyToken reach the Fly Machines API (token default
	// $FLY_API_TOKEN, as fly.New reads it).
	FlyURL, FlyToken string
	// LBAdmin is the embedded load balancer's admin API URL; empty: none.
	LBAdmin string
	// LBToken returns its admin token; called only with LBAdmin.
	LBToken func() (string, error)
	// Strategy and App: on Fly, bluegreen without LBAdmin routes through
	// Fly Proxy (App's machines cordoned and uncordoned).
	Strategy publish.Strategy
	App      string
}

// UsageError is a name or credential the options get wrong: nothing was
// opened or changed. Flag names the option, when one is to blame.
type UsageError struct {
	Flag string
	Err  error
}

func (e *UsageError) Error() string {
	if e.Flag == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s: %v", e.Flag, e.Err)
}

// Unwrap is the cause.
func (e *UsageError) Unwrap() error { return e.Err }

// dockerTimeout bounds reaching the Docker engine.
const dockerTimeout = 5 * time.Second

// Platform opens the platform o names; close releases it. Errors: a
// *UsageError (unknown platform, a local daemon that is not running —
// wrapping local.ErrNotRunning —, a bad Fly credential); for docker, an
// engine that does not answer or is older than Engine API 1.41 wraps
// platform.ErrUnavailable.
func Platform(ctx context.Context, o Options) (platform.Platform, func(), error) {
	switch o.Platform {
	case "local":
		c, err := local.Dial(o.StateDir, o.LocalAPI)
		if errors.Is(err, local.ErrNotRunning) {
			return nil, nil, &UsageError{Err: fmt.Errorf("%w: start it with `mythex publish local-platform --state-dir %s`, or pick --platform fly|docker", err, o.StateDir)}
		} else if err != nil {
			return nil, nil, &UsageError{Flag: "local platform", Err: err}
		}
		return c, func() {}, nil
	case "fly":
		c, err := fly.New(fly.Options{BaseURL: o.FlyURL, Token: o.FlyToken})
		if err != nil {
			return nil, nil, &UsageError{Flag: "--platform fly", Err: err}
		}
		return c, func() {}, nil
	case "docker":
		// The runtime's client: pinged, and refused below Engine API 1.41,
		// so both Docker packages reach the engine the same way.
		cctx, cancel := context.WithTimeout(ctx, dockerTimeout)
		defer cancel()
		cli, err := rdocker.Connect(cctx, "")
		if err != nil {
			return nil, nil, fmt.Errorf("--platform docker: %w: %w (is dockerd running? DOCKER_HOST?)", platform.ErrUnavailable, err)
		}
		p, err := docker.New(docker.Options{Client: cli})
		if err != nil {
			cli.Close()
			return nil, nil, fmt.Errorf("--platform docker: %w", err)
		}
		return p, func() { p.Close() }, nil
	}
	return nil, nil, &UsageError{Flag: fmt.Sprintf("--platform %q", o.Platform), Err: errors.New("use local, fly or docker")}
}

// Router returns the load balancer the publish drives, or nil (in place).
// On Fly with bluegreen and no LBAdmin it is Fly Proxy itself. Errors are
// *UsageError (a bad Fly credential, no LB token).
func Router(o Options) (lbport.Driver, error) {
	if o.LBAdmin == "" && o.Platform == "fly" && o.Strategy == publish.StrategyBlueGreen {
		c, err := fly.New(fly.Options{BaseURL: o.FlyURL, Token: o.FlyToken})
		if err != nil {
			return nil, &UsageError{Flag: "--platform fly", Err: err}
		}
		return fly.NewProxyRouter(c, o.App), nil
	}
	if o.LBAdmin == "" {
		return nil, nil
	}
	token, err := o.LBToken()
	if err != nil {
		return nil, &UsageError{Flag: "--lb-admin " + o.LBAdmin, Err: err}
	}
	return embedded.New(lbapi.NewClient(o.LBAdmin, token, nil)), nil
}

package platform

import (
	"context"
	"errors"
	"fmt"
)

// Suspender is a platform that can put machines to sleep (suspend), as a
// platform's auto-stop does to an idle app.
type Suspender interface {
	Suspend(ctx context.Context, app, id string) error
}

// ErrCannotSleep is Sleep's error for a platform that is not a Suspender.
var ErrCannotSleep = errors.New("the platform cannot put machines to sleep")

// Sleep suspends every started machine of app on p, or with wake starts
// every suspended one, and returns how many it changed. Errors: ErrCannotSleep
// (nothing changed); p's, naming the machine, for the first that failed
// (the ones before it stay changed).
func Sleep(ctx context.Context, p Platform, app string, wake bool) (int, error) {
	s, ok := p.(Suspender)
	if !ok && !wake {
		return 0, ErrCannotSleep
	}
	ms, err := p.List(ctx, app)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range ms {
		switch {
		case wake && m.State == StateSuspended:
			err = p.Start(ctx, app, m.ID)
		case !wake && m.State == StateStarted:
			err = s.Suspend(ctx, app, m.ID)
		default:
			continue
		}
		if err != nil {
			return n, fmt.Errorf("machine %s: %w", m.ID, err)
		}
		n++
	}
	return n, nil
}

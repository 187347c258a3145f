package agent

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/mythex/mythex/internal/runtime"
)

// stopAllTimeout bounds StopAll: every service's own grace period runs in
// parallel, so this is the longest a single one may take.
const stopAllTimeout = 2 * time.Minute

// StopAll stops every running service of rt in parallel, each within its
// grace period (runtime.UseSpecGrace), and returns when all are stopped or
// stopAllTimeout passed. Errors are logged, not returned: it runs as an
// agent exits (--stop-services-on-exit), when nothing could act on them.
func StopAll(rt runtime.Runtime, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), stopAllTimeout)
	defer cancel()
	sts, err := rt.Status(ctx)
	if err != nil {
		log.Error("stop services", "err", err)
		return
	}
	done := make(chan struct{}, len(sts))
	n := 0
	for _, s := range sts {
		if !s.Running() {
			continue
		}
		n++
		go func() {
			if _, err := rt.Stop(ctx, s.Name, runtime.UseSpecGrace); err != nil && !errors.Is(err, runtime.ErrNotFound) {
				log.Error("stop service", "service", s.Name, "err", err)
			}
			done <- struct{}{}
		}()
	}
	for range n {
		<-done
	}
}

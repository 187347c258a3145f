package deploy

import (
	"context"
	"sync"
	"time"
)

// progressEvery is how often a waiting phase says what it waits for; the
// promise to users is "at least every 2s".
const progressEvery = 1500 * time.Millisecond

// progress rate-limits the progress lines of one wait.
type progress struct {
	d     *Deployer
	host  string
	phase Phase
	last  time.Duration
}

func (d *Deployer) progress(host string, p Phase) *progress {
	return &progress{d: d, host: host, phase: p}
}

// maybe emits detail() when progressEvery has passed since the last line
// (elapsed is the wait so far).
func (p *progress) maybe(elapsed time.Duration, detail func() string) {
	if elapsed-p.last < progressEvery {
		return
	}
	p.last = elapsed
	p.d.emit(p.host, p.phase, EventProgress, elapsed, detail())
}

// whileWaiting emits describe() every progressEvery while a blocking call
// runs (an agent's start or stop), until the returned function is called.
func (d *Deployer) whileWaiting(ctx context.Context, host string, p Phase, describe func(context.Context) string) func() {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	begin := d.clock.Now()
	wg.Go(func() {
		t := d.clock.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.Chan():
				msg := describe(ctx)
				if ctx.Err() != nil {
					return
				}
				d.emit(host, p, EventProgress, d.clock.Since(begin), msg)
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

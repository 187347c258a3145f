// Package fleethistory reads the fleet's deploy history from its agents:
// every host's records, in parallel, merged by deploy id (package history
// merges; each agent keeps its own host's), and a deploy's timeline — its
// recording — from whichever host that keeps one answers first with one
// that can be read, for `mythex history --report`.
package fleethistory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/mythex/mythex/internal/agentconn"
	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/history"
)

// Query says which records to read.
type Query struct {
	// Limit keeps the newest Limit deploys (≤ 0: all). Ignored with ID.
	Limit int
	// ID reads the records of that deploy only; empty: every deploy.
	ID string
}

// Result is the fleet's history as far as it could be read.
type Result struct {
	// Deploys are the deploys, merged across hosts, newest first.
	Deploys []history.Deploy
	// Unread names each host that could not be read, with why, in host
	// order.
	Unread []string
}

// Reader reads the history of one fleet through its agents.
type Reader struct {
	cfg   *fleet.Loaded
	pool  *agentconn.Pool
	token string
}

// NewReader returns a Reader of cfg's agents, reached through pool with
// token.
func NewReader(cfg *fleet.Loaded, pool *agentconn.Pool, token string) *Reader {
	return &Reader{cfg: cfg, pool: pool, token: token}
}

// Read asks every host's agent at once for its records (bounded by ctx) and
// merges them. A host that cannot be read is named in Unread; the others
// are still merged.
func (r *Reader) Read(ctx context.Context, q Query) Result {
	var (
		mu     sync.Mutex
		all    []history.Record
		unread = map[string]string{}
		wg     sync.WaitGroup
	)
	for _, h := range r.cfg.Hosts {
		wg.Go(func() {
			recs, err := r.readHost(ctx, h, q)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				unread[h.Name] = fmt.Sprintf("%s (%v)", h.Name, err)
				return
			}
			all = append(all, recs...)
		})
	}
	wg.Wait()
	res := Result{Deploys: history.Merge(all, q.Limit)}
	for _, h := range r.cfg.Hosts {
		if u, ok := unread[h.Name]; ok {
			res.Unread = append(res.Unread, u)
		}
	}
	return res
}

func (r *Reader) readHost(ctx context.Context, h fleet.Host, q Query) ([]history.Record, error) {
	c, err := r.pool.Connect(ctx, r.cfg, h, r.token)
	if err != nil {
		return nil, err
	}
	if q.ID != "" {
		return c.HistoryOf(ctx, q.ID)
	}
	return c.History(ctx, q.Limit)
}

// Timeline reads d's recording from the first of its hosts that keeps one
// and serves one that decodes (deployrec.Decode: bounded, validated), and
// says which host it came from. Errors: history.ErrNoTimeline when no host
// keeps one (a deploy by an older mythex, or to older agents); else every
// host's reason, joined.
func (r *Reader) Timeline(ctx context.Context, d history.Deploy) (deployrec.Recording, string, error) {
	get := func(ctx context.Context, host string) ([]byte, error) {
		i := slices.IndexFunc(r.cfg.Hosts, func(h fleet.Host) bool { return h.Name == host })
		if i < 0 {
			return nil, fmt.Errorf("not in %s any more", r.cfg.Path)
		}
		c, err := r.pool.Connect(ctx, r.cfg, r.cfg.Hosts[i], r.token)
		if err != nil {
			return nil, err
		}
		return c.Timeline(ctx, d.ID)
	}
	return history.ReadTimeline(ctx, d, get, deployrec.Decode)
}

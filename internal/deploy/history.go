package deploy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/history"
)

// historian is the part of an agent client that keeps history.
type historian interface {
	AppendHistory(ctx context.Context, r history.Record) error
}

// timelineKeeper is the part of an agent client that keeps a deploy's
// recording beside its record.
type timelineKeeper interface {
	PutTimeline(ctx context.Context, id string, data []byte) error
}

// RecordHistory writes the deploy's record (HistoryRecords, under a new ID,
// of the given kind: history.KindDeploy or history.KindRollback) to every
// host's agent, in parallel, bounded, and after it timeline — the deploy's
// recording as deployrec.Encode wrote it, for mythex history --report; nil
// keeps none. A host that cannot be written to is a warning, never a changed
// result. A deploy refused before it touched anything (preflight, another
// deploy in progress, bad input) is not recorded.
func RecordHistory(ctx context.Context, kind string, hosts []Host, who string, began time.Time, res Result, err error, timeline []byte, errOut io.Writer) {
	if errors.Is(err, ErrPreflight) || errors.Is(err, ErrInProgress) || len(res.Hosts) == 0 {
		return
	}
	id := NewID(began)
	recs := HistoryRecords(id, who, began, time.Now(), hosts, res, err)
	for i := range recs {
		recs[i].Kind = kind
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, h := range hosts {
		hi, ok := h.Agent.(historian)
		if !ok {
			continue
		}
		warn := func(format string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(errOut, "warning: host %s: "+format+"\n", append([]any{h.Name}, a...)...)
		}
		wg.Go(func() {
			if err := hi.AppendHistory(ctx, recs[i]); err != nil {
				warn("deploy history not recorded: %v", err)
				return
			}
			tk, ok := h.Agent.(timelineKeeper)
			if !ok || timeline == nil {
				return
			}
			switch err := tk.PutTimeline(ctx, id, timeline); {
			case errors.Is(err, agentapi.ErrNotFound):
				warn("its agent keeps no deploy timelines (it is older than this mythex; upgrade it for mythex history --report)")
			case err != nil:
				warn("deploy timeline not kept: %v", err)
			}
		})
	}
	wg.Wait()
}

// HistoryRecords is the deploy id's record as each of hosts saw it: its
// result (ok, rolled_back, failed), the host's own (untouched when the
// deploy never reached it), the versions and phase times. RecordHistory
// writes them.
func HistoryRecords(id, who string, began, ended time.Time, hosts []Host, res Result, err error) []history.Record {
	result := history.ResultOK
	rolledBack := false
	for _, h := range res.Hosts {
		rolledBack = rolledBack || h.RolledBack
	}
	switch {
	case err == nil:
	case rolledBack:
		result = history.ResultRolledBack
	default:
		result = history.ResultFailed
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	byHost := map[string]HostResult{}
	for _, h := range res.Hosts {
		byHost[h.Host] = h
	}
	recs := make([]history.Record, len(hosts))
	for i, h := range hosts {
		r := history.Record{ID: id, Kind: history.KindDeploy, Host: h.Name, Who: who, Started: began, Ended: ended,
			To: res.Version, Result: result, HostResult: "untouched", Error: msg}
		if hr, ok := byHost[h.Name]; ok {
			r.From = hr.PreviousVersion
			switch {
			case hr.RolledBack:
				r.HostResult = history.ResultRolledBack
			case hr.OK:
				r.HostResult = history.ResultOK
			default:
				r.HostResult = history.ResultFailed
			}
			for _, p := range hr.Phases {
				r.Phases = append(r.Phases, history.Phase{Phase: string(p.Phase), Seconds: p.Seconds})
			}
		}
		recs[i] = r
	}
	return recs
}

// NewID is a deploy's history id: when it began and a random suffix, so ids
// sort by time and never collide across deployers.
func NewID(began time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return began.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

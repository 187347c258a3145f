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

	"github.com/mythex/mythex/internal/history"
)

// historian is the part of an agent client that keeps history.
type historian interface {
	AppendHistory(ctx context.Context, r history.Record) error
}

// RecordHistory writes the deploy's record (HistoryRecords, under a new
// ID) to every host's agent, in
// parallel, bounded; a host that cannot be written to is a warning, never a
// changed result. A deploy refused before it touched anything (preflight,
// another deploy in progress, bad input) is not recorded.
// kind is history.KindDeploy or history.KindRollback.
func RecordHistory(ctx context.Context, kind string, hosts []Host, who string, began time.Time, res Result, err error, errOut io.Writer) {
	if errors.Is(err, ErrPreflight) || errors.Is(err, ErrInProgress) || len(res.Hosts) == 0 {
		return
	}
	recs := HistoryRecords(NewID(began), who, began, time.Now(), hosts, res, err)
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
		wg.Go(func() {
			if err := hi.AppendHistory(ctx, recs[i]); err != nil {
				mu.Lock()
				fmt.Fprintf(errOut, "warning: host %s: deploy history not recorded: %v\n", h.Name, err)
				mu.Unlock()
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

package history

import (
	"slices"
	"strings"
	"time"
)

// Deploy is one deploy across the fleet: the records of every host that
// kept one, merged by id.
type Deploy struct {
	ID      string    `json:"id"`
	Kind    string    `json:"kind"`
	Who     string    `json:"who"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// From are the versions hosts ran before, distinct, sorted.
	From   []string `json:"from,omitempty"`
	To     string   `json:"to"`
	Result string   `json:"result"`
	Error  string   `json:"error,omitempty"`
	// Hosts are the per-host records, in host name order.
	Hosts []Record `json:"hosts"`
}

// Merge groups records of many hosts by deploy id, newest deploy first, and
// keeps the newest limit (≤ 0: all). Where hosts disagree (a deployer that
// died half-way wrote to some hosts only), the worst result wins.
func Merge(recs []Record, limit int) []Deploy {
	byID := map[string]*Deploy{}
	var order []*Deploy
	for _, r := range recs {
		d, ok := byID[r.ID]
		if !ok {
			d = &Deploy{ID: r.ID, Kind: r.Kind, Who: r.Who, Started: r.Started, Ended: r.Ended, To: r.To, Result: r.Result, Error: r.Error}
			byID[r.ID] = d
			order = append(order, d)
		}
		if r.Started.Before(d.Started) {
			d.Started = r.Started
		}
		if r.Ended.After(d.Ended) {
			d.Ended = r.Ended
		}
		if worse(r.Result, d.Result) {
			d.Result = r.Result
		}
		if d.Error == "" {
			d.Error = r.Error
		}
		if r.From != "" && !slices.Contains(d.From, r.From) {
			d.From = append(d.From, r.From)
		}
		d.Hosts = append(d.Hosts, r)
	}
	out := make([]Deploy, 0, len(order))
	for _, d := range order {
		slices.Sort(d.From)
		slices.SortFunc(d.Hosts, func(a, b Record) int { return strings.Compare(a.Host, b.Host) })
		out = append(out, *d)
	}
	slices.SortStableFunc(out, func(a, b Deploy) int { return b.Started.Compare(a.Started) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

func worse(a, b string) bool {
	rank := map[string]int{ResultOK: 0, ResultRolledBack: 1, ResultFailed: 2}
	return rank[a] > rank[b]
}

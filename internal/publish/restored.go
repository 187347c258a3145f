package publish

import "time"

// restoredTimes decides, for a live release rel about to be re-checked, from
// when each of its machines is judged and which machines are not yet back on
// it, given the releases published after it (newer, any order).
//
// A newer release that wrote to one of rel's machines (in place) and was then
// rolled back put rel there again with a later write: rel's own Since for
// that machine predates the newer release's run, whose crashes (still in the
// platform's event list) are not rel's. Such a machine's entry is left out of
// since, so the judge takes its t0 from the platform's newest launch or update
// event in the first look that shows rel — the write that restored it, on the
// platform's own clock. Every such machine is also given the newer release as
// what it ran before: a look that still shows it there means the rollback has
// not settled yet — "not yet", never a failure of rel. replacedAt is when
// (our clock, the newer release's last record change: its rollback's end)
// the latest such release let go of rel's machines; a last look of rel taken
// before it shows the write before the newer one and is no baseline.
func restoredTimes(rel Release, newer []Release) (since map[string]time.Time, before map[string]Prior, replacedAt time.Time) {
	since = make(map[string]time.Time, len(rel.Since))
	for id, t := range rel.Since {
		since[id] = t
	}
	mine := map[string]bool{}
	for _, id := range rel.Machines {
		mine[id] = true
	}
	var newest map[string]Release // per machine, the latest newer release that wrote to it
	for _, n := range newer {
		if n.ID == rel.ID || n.Seq <= rel.Seq {
			continue
		}
		for _, id := range n.Machines {
			if !mine[id] {
				continue
			}
			if newest == nil {
				newest = map[string]Release{}
			}
			if cur, ok := newest[id]; !ok || n.Seq > cur.Seq {
				newest[id] = n
			}
			delete(since, id)
		}
	}
	if len(newest) == 0 {
		return since, nil, time.Time{}
	}
	before = make(map[string]Prior, len(newest))
	for id, n := range newest {
		before[id] = Prior{Release: n.ID, Image: n.Config.Image}
		if n.UpdatedAt.After(replacedAt) {
			replacedAt = n.UpdatedAt
		}
	}
	return since, before, replacedAt
}

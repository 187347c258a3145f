package deploy

import (
	"fmt"
	"slices"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
)

// instance is what one look saw of one service: which instance served it,
// when it last started and when it last ended.
type instance struct {
	ID       string
	Running  bool
	Started  time.Time
	Finished time.Time
}

// look is one look at a host: an instance per service, by name.
type look map[string]instance

// takeLook reads st for the named services (every service st lists when
// names is empty). For each it takes the running instance, else the newest.
func takeLook(st agentapi.Status, names []string) look {
	lk := look{}
	for _, s := range st.Services {
		if len(names) > 0 && !slices.Contains(names, s.Name) {
			continue
		}
		in := instance{ID: s.ID, Running: s.Running}
		if s.StartedAt != nil {
			in.Started = *s.StartedAt
		}
		if s.FinishedAt != nil {
			in.Finished = *s.FinishedAt
		}
		cur, seen := lk[s.Name]
		switch {
		case !seen, in.Running && !cur.Running, in.Running == cur.Running && in.Started.After(cur.Started):
			lk[s.Name] = in
		}
	}
	for _, n := range names {
		if _, ok := lk[n]; !ok {
			lk[n] = instance{}
		}
	}
	return lk
}

// changes compares a later look with an earlier one and says, per service,
// why it did not stay up in between: not running now, another instance, a
// later start, or a later exit. It compares the latest start and exit
// timestamps the runtime reports — never counts of restarts, which a
// runtime may reset or a watchdog may reach again — as Nomad's health
// tracker and the publish gate do. Empty means every service stayed up.
func changes(earlier, later look) []string {
	names := make([]string, 0, len(earlier))
	for n := range earlier {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []string
	for _, n := range names {
		a, b := earlier[n], later[n]
		switch {
		case b.ID == "" && !b.Running:
			out = append(out, fmt.Sprintf("%s: no instance any more", n))
		case !b.Running && b.Finished.After(a.Finished):
			out = append(out, fmt.Sprintf("%s: exited at %s, %.1fs after it started", n, b.Finished.Format("15:04:05.000"), b.Finished.Sub(b.Started).Seconds()))
		case !b.Running:
			out = append(out, fmt.Sprintf("%s: not running", n))
		case a.ID != b.ID:
			out = append(out, fmt.Sprintf("%s: instance %s replaced by %s", n, a.ID, b.ID))
		case !b.Started.Equal(a.Started):
			out = append(out, fmt.Sprintf("%s: restarted at %s (exited and started again since the last look)", n, b.Started.Format("15:04:05.000")))
		case b.Finished.After(a.Finished):
			out = append(out, fmt.Sprintf("%s: exited at %s since the last look", n, b.Finished.Format("15:04:05.000")))
		case !a.Running:
			out = append(out, fmt.Sprintf("%s: was not running at the first look", n))
		}
	}
	return out
}

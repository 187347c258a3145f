package runtime

import (
	"cmp"
	"slices"
)

// SortStatuses sorts s in the order Runtime.Status promises: by service
// name, then by start time (oldest first), then by instance ID so that two
// instances started in the same instant keep one order from call to call.
// Every runtime (and every fake of one) sorts its Status through it.
func SortStatuses(s []ServiceStatus) {
	slices.SortFunc(s, func(a, b ServiceStatus) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.ID, b.ID))
	})
}

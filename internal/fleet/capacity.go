package fleet

import (
	"fmt"
	"strconv"
	"strings"
)

// InService parses deploy.min_in_service and says how many targets of a
// fleet of hosts hosts must stay healthy and in rotation while a batch
// drains. A count ("2") is taken as is; a percentage ("50%") is of hosts,
// rounded up as ECS rounds minimumHealthyPercent, and never less than 1.
// This is the one place the arithmetic lives: the timing invariant
// "capacity" (mythex check) and the deploy's live capacity check both call
// it. Errors: a *FieldError for a value that is neither.
func (d Deploy) InService(hosts int) (int, error) {
	s := strings.TrimSpace(d.MinInService)
	if s == "" {
		return 1, nil
	}
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		p, err := strconv.Atoi(strings.TrimSpace(pct))
		if err != nil || p < 1 || p > 100 {
			return 0, &FieldError{Field: "deploy.min_in_service", Msg: fmt.Sprintf("%q: a percentage must be a whole number from 1%% to 100%%, like 50%%", d.MinInService)}
		}
		return max((hosts*p+99)/100, 1), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, &FieldError{Field: "deploy.min_in_service", Msg: fmt.Sprintf("%q: give a count of at least 1 (like 1) or a percentage of the hosts (like 50%%)", d.MinInService)}
	}
	return n, nil
}

// CapacityHolds reports whether a batch of batch hosts may leave rotation
// when inService targets outside it are healthy and in rotation and
// required must stay: inService ≥ required. Statically (mythex check) the
// hosts outside a batch stand in for inService.
func CapacityHolds(inService, required int) bool { return inService >= required }

package timing

import (
	"fmt"
	"time"
)

// CallTimeoutName is the name of the relation CallTimeout judges.
const CallTimeoutName = "call-timeout"

// CallTimeout judges an API call that waits on a stop: a platform's update
// or stop call returns only once the old instance has stopped, which may take
// the whole stop timeout (SIGTERM, the grace period, SIGKILL). A caller whose
// own timeout is not longer gives up on a stop that is going well and reports
// a failure — publish's --call-timeout against a Fly machine's kill_timeout,
// a watchdog's Docker API timeout against the container's stop timeout.
// call names the caller's timeout ("publish --call-timeout"), stop the
// timeout it waits on ("kill_timeout"); the relation is call > stop.
func CallTimeout(callName string, call time.Duration, stopName string, stop time.Duration) Result {
	cl := atLeast(call, stop, true, func() string {
		return fmt.Sprintf("%s %s > %s %s", callName, fmtDur(call), stopName, fmtDur(stop))
	}).because(func() string {
		return fmt.Sprintf("a stop may take the whole %s %s; the call waiting on it gives up after %s and reports a failure while the stop is still going well",
			stopName, fmtDur(stop), fmtDur(call))
	})
	r := Result{Name: CallTimeoutName, Level: cl.level, Formula: cl.text(), Slack: cl.slack, HasSlack: true}
	if cl.level != Pass {
		r.Notes = []string{cl.why()}
	}
	return r
}

// Within judges a relation a platform states outside fleet.Config: lhs ≤ rhs,
// named name, written out as "lhsName L ≤ rhsName R", with why as the note
// when it fails — kamal-proxy's response_timeout within its drain_timeout,
// for example.
func Within(name, lhsName string, lhs time.Duration, rhsName string, rhs time.Duration, why string) Result {
	cl := atMost(lhs, rhs, false, func() string {
		return fmt.Sprintf("%s %s ≤ %s %s", lhsName, fmtDur(lhs), rhsName, fmtDur(rhs))
	})
	r := Result{Name: name, Level: cl.level, Formula: cl.text(), Slack: cl.slack, HasSlack: true}
	if cl.level != Pass {
		r.Notes = []string{why}
	}
	return r
}

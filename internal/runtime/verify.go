package runtime

import (
	"fmt"

	"github.com/mythex/mythex/internal/definition"
)

// ServiceCheck is the verdict on one service of a definition (Verify).
type ServiceCheck struct {
	// Name is the service name.
	Name string `json:"name"`
	// OK is true when an instance of exactly the definition's spec runs and
	// is healthy (or has no healthcheck).
	OK bool `json:"ok"`
	// Reason says why not, for a person: "not running", "exited with code 1",
	// "runs version v1, not v2", "starting", "unhealthy: last check 503".
	Reason string `json:"reason,omitempty"`
	// Status is the instance the verdict is about: the one running the
	// service, else the newest; zero when the runtime has none.
	Status ServiceStatus `json:"status"`
}

// Verify decides whether what a runtime reports (Status) runs definition d:
// every service of d must have a running instance of exactly its spec hash,
// healthy, or without a healthcheck. It returns one check per service of d,
// in d's order, and whether all passed. It is a pure function of its inputs —
// "verify, don't trust" (the write-up's deploy reported success while a server
// ran no gateway): the deploy succeeds on what runs, not on
// commands that returned 0. A "starting" service is not yet OK; the caller
// owns the deadline and calls Verify again.
func Verify(d *definition.Definition, statuses []ServiceStatus) (checks []ServiceCheck, ok bool) {
	ok = true
	for _, svc := range d.Services {
		c := verifyService(svc, statuses)
		ok = ok && c.OK
		checks = append(checks, c)
	}
	return checks, ok
}

func verifyService(svc definition.Service, statuses []ServiceStatus) ServiceCheck {
	c := ServiceCheck{Name: svc.Name}
	var running, newest *ServiceStatus
	for i := range statuses {
		s := &statuses[i]
		if s.Name != svc.Name {
			continue
		}
		if s.Running() {
			running = s
		}
		if newest == nil || s.StartedAt.After(newest.StartedAt) {
			newest = s
		}
	}
	spec := svc.SpecHash()
	switch {
	case running == nil && newest == nil:
		c.Reason = "not running: the runtime has no instance of it"
		return c
	case running == nil && newest.State == StateRestarting:
		c.Status = *newest
		c.Reason = fmt.Sprintf("not running: %s exited with code %d and its restart policy is restarting it", newest.ID, newest.ExitCode)
		return c
	case running == nil:
		c.Status = *newest
		c.Reason = fmt.Sprintf("not running: %s %s with code %d", newest.ID, newest.State, newest.ExitCode)
		return c
	}
	c.Status = *running
	if running.SpecHash != spec {
		c.Reason = fmt.Sprintf("runs %s (version %s), not the definition's spec (version %s)", running.ID, running.Version, svc.Version)
		return c
	}
	switch running.Health.Status {
	case HealthHealthy, HealthNone, "":
		c.OK = true
	case HealthStarting:
		// The latest check says what the service is waiting on (a
		// refused connection, a check that exceeded its timeout), so a
		// start that times out names the cause, not only the state.
		c.Reason = "starting: no health check has passed yet" + lastCheck(running.Health)
	default:
		c.Reason = "unhealthy" + lastCheck(running.Health)
	}
	return c
}

func lastCheck(h Health) string {
	if len(h.Log) == 0 {
		return ""
	}
	l := h.Log[len(h.Log)-1]
	return fmt.Sprintf(": last check exit/status %d %q", l.ExitCode, l.Output)
}

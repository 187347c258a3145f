package nativecfg

import (
	"fmt"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// NewSubject starts a Subject with the numbers no platform file holds set so
// that only the platform's relations are judged: mythex's own watchdog and
// deploy budget are left out, the app's keep-alive is left out until a fact
// annotation gives it, and the deploy takes the target out by deregistration
// (every orchestrator here removes a terminating instance from discovery).
func NewSubject(platform, name, file string) *Subject {
	c := fleet.Default()
	c.Drain.Max = 1000 * time.Hour
	c.Backend.KeepAliveIdleTimeout = 1000 * time.Hour
	c.Deploy.DrainMode = fleet.DrainModeDeregister
	s := &Subject{Platform: platform, Name: name, File: file, Config: c}
	s.Unjudge("watchdog-patience", "mythex's own watchdog: not part of a "+platform+" deploy")
	s.Unjudge("drain-budget", "mythex's own deploy budget: not part of a "+platform+" deploy")
	s.Unjudge("capacity", "replica counts are not judged by the timing model")
	s.Unjudge("keep-alive", "the app's keep-alive idle timeout is not in these files; declare it as the fact "+FactPrefix+"keepalive-idle-timeout")
	return s
}

// FactPrefix starts the annotation (Kubernetes), label (compose, ECS docker
// labels) or meta key (Nomad) that declares a fact about the app no platform
// file holds, as a Go duration: serve-period (how long it keeps accepting
// after SIGTERM; default 0), shutdown-timeout (how long it lets in-flight
// requests finish; default 0, unknown), longest-request, and
// keepalive-idle-timeout.
const FactPrefix = "mythex.dev/"

// facts maps each fact key to the model field it sets.
var facts = []struct{ key, field string }{
	{"serve-period", "drain.serve_period"},
	{"shutdown-timeout", "drain.shutdown_timeout"},
	{"longest-request", "backend.longest_request"},
	{"keepalive-idle-timeout", "backend.keepalive_idle_timeout"},
}

// ApplyFacts reads the app facts through get (a key's value and its Loc) and
// sets them in s. A malformed value is an error naming the key.
func (s *Subject) ApplyFacts(get func(key string) (string, Loc, bool)) error {
	declared := map[string]bool{}
	for _, f := range facts {
		v, loc, ok := get(FactPrefix + f.key)
		if !ok {
			continue
		}
		declared[f.key] = true
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("%s: %s is %q: want a Go duration such as 15s", loc.resolved(), FactPrefix+f.key, v)
		}
		setDur(&s.Config, f.field, d)
		// A fact describes the app; a fix changes configuration, not code.
		s.Bind(f.field, loc, GoDuration).Derived = true
		if f.key == "keepalive-idle-timeout" {
			delete(s.Unjudged, "keep-alive")
		}
	}
	if declared["longest-request"] && !declared["shutdown-timeout"] && s.Config.Drain.ShutdownTimeout < s.Config.Backend.LongestRequest {
		// An app whose longest request is known lets it finish: its
		// shutdown takes that long.
		s.Config.Drain.ShutdownTimeout = s.Config.Backend.LongestRequest
		s.Notes = append(s.Notes, "assumed: the app lets in-flight requests finish on SIGTERM (shutdown-timeout = longest-request)")
	}
	return nil
}

func setDur(c *fleet.Config, field string, d time.Duration) {
	switch field {
	case "drain.serve_period":
		c.Drain.ServePeriod = d
	case "drain.shutdown_timeout":
		c.Drain.ShutdownTimeout = d
	case "backend.longest_request":
		c.Backend.LongestRequest = d
	case "backend.keepalive_idle_timeout":
		c.Backend.KeepAliveIdleTimeout = d
	}
}

// Validate checks the translated model; an error here is a reader's bug or a
// value outside what the model accepts, named with the unit.
func (s *Subject) Validate() error {
	if err := s.Config.Validate(); err != nil {
		return fmt.Errorf("%s %s: %w", s.File, s.Name, err)
	}
	return nil
}

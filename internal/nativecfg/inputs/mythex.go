package inputs

import (
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/nativecfg"
	"github.com/mythex/mythex/internal/timing"
)

// mythexFields are the numbers of mythex.yml a fix may change, in the order
// a person would change them.
var mythexFields = []string{
	"drain.serve_period", "backend.stop_grace_period", "drain.pre_stop", "drain.shutdown_timeout",
	"load_balancer.health_check.interval", "load_balancer.health_check.timeout",
	"load_balancer.health_check.unhealthy_threshold", "load_balancer.health_check.healthy_threshold",
	"backend.keepalive_idle_timeout", "load_balancer.idle_timeout", "load_balancer.deregistration_delay",
	"watchdog.failures_before_heal", "watchdog.interval", "drain.max", "deploy.batch_size",
}

// readMythex judges a mythex.yml among native files: every invariant, keys
// named by their dotted paths.
func readMythex(file string, data []byte) (*nativecfg.Subject, error) {
	l, err := fleet.Parse(file, data)
	if err != nil {
		return nil, err
	}
	s := &nativecfg.Subject{Platform: nativecfg.Mythex, Name: "fleet", File: file, Config: l.Config}
	src := nativecfg.NewSource(data, 1)
	for _, f := range mythexFields {
		_, isDur, ok := timing.FieldValue(&s.Config, f)
		if !ok {
			continue
		}
		u := nativecfg.Count
		if isDur {
			u = nativecfg.GoDuration
		}
		s.Bind(f, src.At(file, f), u)
	}
	return s, nil
}

package demo

import (
	"fmt"
	"strings"
)

// CheckFlags checks o as `mythex demo` takes it from its flags, before
// anything starts: at least 2 hosts (one serves while the other is
// deployed), at most 20, a sane rate, known profile, load balancer and
// fault. scaleSet and deploysSet say whether --time-scale and --deploys were
// given. Errors name the flag and the fix.
func (o Options) CheckFlags(scaleSet, deploysSet bool) error {
	switch {
	case o.Hosts < 2:
		return fmt.Errorf("--hosts %d: a rolling deploy that drops nothing needs at least 2 hosts (one serves while the other is deployed)", o.Hosts)
	case o.Hosts > 20:
		return fmt.Errorf("--hosts %d: at most 20 on one machine", o.Hosts)
	case o.Rate <= 0 || o.Rate > 20000:
		return fmt.Errorf("--rate %g: give requests per second, more than 0 and at most 20000", o.Rate)
	case o.Deploys < 1:
		return fmt.Errorf("--deploys %d: give at least 1", o.Deploys)
	case scaleSet && (o.TimeScale <= 0 || o.TimeScale > 10):
		return fmt.Errorf("--time-scale %g: give a factor more than 0 and at most 10 (1 runs the real numbers)", o.TimeScale)
	case o.Profile != ProfileAfter && o.Profile != ProfileBefore:
		return fmt.Errorf("--profile %q: use after or before", o.Profile)
	case o.LB != LBEmbedded && o.LB != LBHAProxy && o.LB != LBALB:
		return fmt.Errorf("--lb %q: use %s, %s or %s (the alb driver through the embedded LB's ELBv2 endpoint)", o.LB, LBEmbedded, LBHAProxy, LBALB)
	case o.Fault != "" && Faults[o.Fault].Name == "":
		return fmt.Errorf("--fault %q: use one of %s", o.Fault, strings.Join(FaultNames(), ", "))
	case o.Fault != "" && o.Runtime != RuntimeProcess:
		return fmt.Errorf("--fault runs on the process runtime only")
	case o.Fault != "" && deploysSet && o.Deploys != 1:
		return fmt.Errorf("--fault runs one deploy; leave out --deploys")
	}
	return nil
}

package demo

import (
	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/lbport"
	"github.com/mythex/mythex/internal/lbport/embedded"
	"github.com/mythex/mythex/internal/lbport/haproxy/deploylb"
)

// lbDriver is a driver of the fleet's load balancer for what the demo does
// to it outside a deploy (a fault's operator, the final state's judge):
// HAProxy's Runtime API (read as the deploy reads it), else the embedded
// LB's admin API (behind --lb alb too: the demo's own view, not the ELBv2
// calls the deploy is measured by).
func (f *Fleet) lbDriver() (lbport.Driver, error) {
	if f.Loaded.LoadBalancer.Kind == fleet.KindHAProxy {
		d, err := deploylb.NewDriver(f.Loaded)
		if err != nil {
			return nil, err
		}
		targets := map[string]string{}
		for _, h := range f.Loaded.Hosts {
			targets[h.Name] = h.Target
		}
		return deploylb.LB{Driver: d, Targets: targets}, nil
	}
	return embedded.New(f.lbClient()), nil
}

// lbRef is host i's target as lbDriver knows it: its name and target.
func (f *Fleet) lbRef(i int) lbport.TargetRef {
	h := f.Loaded.Hosts[i]
	return lbport.TargetRef{ID: h.Name, Address: h.Target}
}

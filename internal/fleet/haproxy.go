package fleet

import (
	"fmt"
	"net"
	"regexp"
	"strings"
)

// haproxyNameRE is what HAProxy accepts as a backend or server name.
var haproxyNameRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)

// ServerName is host h's server name in the HAProxy backend: h.Server, or
// h.Name when unset.
func (h Host) ServerName() string {
	if h.Server != "" {
		return h.Server
	}
	return h.Name
}

// validateHAProxy checks the fields of kind haproxy when set: the Runtime
// API address, the backend, each host's server name. They are required only
// by what drives HAProxy (deploy, check --live), which says so; `mythex
// check` of the timing needs none. For other kinds they must be unset.
func (c *Config) validateHAProxy(p *problems) {
	lb := &c.LoadBalancer
	if lb.Kind != KindHAProxy {
		for field, v := range map[string]string{"load_balancer.runtime_api": lb.RuntimeAPI, "load_balancer.backend": lb.Backend, "load_balancer.config_file": lb.ConfigFile} {
			if v != "" {
				p.add(field, "is for kind haproxy only; load_balancer.kind is %q", lb.Kind)
			}
		}
		for i, h := range c.Hosts {
			if h.Server != "" {
				p.add(fmt.Sprintf("hosts[%d].server", i), "is for load_balancer.kind haproxy only; load_balancer.kind is %q", lb.Kind)
			}
		}
		return
	}
	switch network, rest, _ := strings.Cut(lb.RuntimeAPI, ":"); {
	case lb.RuntimeAPI == "":
	case network == "unix":
		if !strings.HasPrefix(rest, "/") {
			p.add("load_balancer.runtime_api", "%q: a unix socket needs an absolute path, like unix:/run/haproxy/admin.sock", lb.RuntimeAPI)
		}
	case network == "tcp":
		if _, _, err := net.SplitHostPort(rest); err != nil {
			p.add("load_balancer.runtime_api", "%q: want tcp:host:port, like tcp:127.0.0.1:9999", lb.RuntimeAPI)
		}
	default:
		p.add("load_balancer.runtime_api", "%q: want unix:/path/to/admin.sock or tcp:host:port", lb.RuntimeAPI)
	}
	if lb.Backend != "" && !haproxyNameRE.MatchString(lb.Backend) {
		p.add("load_balancer.backend", "%q: name the HAProxy backend whose servers are the hosts (letters, digits, '-', '_', '.', ':'), as on its `backend` line in haproxy.cfg", lb.Backend)
	}
	servers := map[string]int{}
	for i, h := range c.Hosts {
		f := fmt.Sprintf("hosts[%d].server", i)
		name := h.ServerName()
		if name == "" {
			continue // the empty host name is reported on hosts[i].name
		}
		if !haproxyNameRE.MatchString(name) {
			p.add(f, "%q is not an HAProxy server name (letters, digits, '-', '_', '.', ':'); set hosts[%d].server to the name on its `server` line", name, i)
		}
		if j, dup := servers[name]; dup {
			p.add(f, "server %q is also hosts[%d]'s; each host is its own server", name, j)
		}
		servers[name] = i
	}
}

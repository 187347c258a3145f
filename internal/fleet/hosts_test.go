package fleet

import (
	"slices"
	"testing"
)

func TestConfig_Host(t *testing.T) {
	c := &Config{Hosts: []Host{{Name: "web-1", Agent: "127.0.0.1:1"}, {Name: "web-2", Agent: "127.0.0.1:2"}}}
	cases := []struct {
		name, host string
		ok         bool
		agent      string
	}{
		{"first", "web-1", true, "127.0.0.1:1"},
		{"second", "web-2", true, "127.0.0.1:2"},
		{"unknown", "web-3", false, ""},
		{"empty name", "", false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, ok := c.Host(tc.host)
			if ok != tc.ok || h.Agent != tc.agent {
				t.Errorf("Host(%q) = %+v, %v; want agent %q, %v", tc.host, h, ok, tc.agent, tc.ok)
			}
		})
	}
	if got := c.HostNames(); !slices.Equal(got, []string{"web-1", "web-2"}) {
		t.Errorf("HostNames = %v", got)
	}
}

func TestLoaded_AdminTokenPath(t *testing.T) {
	cases := []struct{ name, file, want string }{
		{"unset", "", ""},
		{"relative to mythex.yml", "secrets/lb.token", "/etc/fleet/secrets/lb.token"},
		{"absolute", "/run/lb.token", "/run/lb.token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := &Loaded{Path: "/etc/fleet/mythex.yml"}
			l.LoadBalancer.AdminTokenFile = tc.file
			if got := l.AdminTokenPath(); got != tc.want {
				t.Errorf("AdminTokenPath = %q, want %q", got, tc.want)
			}
		})
	}
}

package fleet

import (
	"errors"
	"strings"
	"testing"
)

func TestParse_HAProxy(t *testing.T) {
	hx := strings.Replace(minimal, "load_balancer:\n", "load_balancer:\n  kind: haproxy\n  runtime_api: unix:/run/haproxy/admin.sock\n  backend: app\n", 1)
	hosts := "hosts:\n  - {name: web-1, target: 127.0.0.1:1}\n  - {name: web-2, target: 127.0.0.1:2, server: app2}\n"
	l, err := Parse("m.yml", []byte(hx+hosts))
	if err != nil {
		t.Fatal(err)
	}
	if l.LoadBalancer.RuntimeAPI != "unix:/run/haproxy/admin.sock" || l.LoadBalancer.Backend != "app" ||
		l.Hosts[0].ServerName() != "web-1" || l.Hosts[1].ServerName() != "app2" {
		t.Fatalf("%+v %+v", l.LoadBalancer, l.Hosts)
	}
	// Encode round-trips the new fields (the demo writes its config so).
	b, err := Encode(l.Config)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("m.yml", b)
	if err != nil || back.Hosts[1].Server != "app2" || back.LoadBalancer.Backend != "app" {
		t.Fatalf("round trip: %v %+v", err, back)
	}

	// check of the timing needs neither the Runtime API nor the backend.
	if _, err := Parse("m.yml", []byte(strings.Replace(minimal, "load_balancer:\n", "load_balancer:\n  kind: haproxy\n", 1))); err != nil {
		t.Fatalf("kind haproxy without runtime_api and backend: %v", err)
	}
	cases := []struct{ name, yaml, field, msg string }{
		{"relative socket", strings.Replace(hx, "unix:/run", "unix:run", 1), "load_balancer.runtime_api", "absolute path"},
		{"tcp without port", strings.Replace(hx, "unix:/run/haproxy/admin.sock", "tcp:127.0.0.1", 1), "load_balancer.runtime_api", "tcp:host:port"},
		{"other scheme", strings.Replace(hx, "unix:/run/haproxy/admin.sock", "http://127.0.0.1:9999", 1), "load_balancer.runtime_api", "want unix:"},
		{"backend smuggling a command", strings.Replace(hx, "backend: app", `backend: "app; shutdown sessions server app/web-1"`, 1), "load_balancer.backend", "letters, digits"},
		{"bad server name", hx + "hosts:\n  - {name: web-1, target: 127.0.0.1:1, server: 'a b'}\n", "hosts[0].server", "not an HAProxy server name"},
		{"duplicate server", hx + "hosts:\n  - {name: web-1, target: 127.0.0.1:1}\n  - {name: web-2, target: 127.0.0.1:2, server: web-1}\n", "hosts[1].server", "also hosts[0]"},
		{"haproxy field on embedded", strings.Replace(minimal, "load_balancer:\n", "load_balancer:\n  backend: app\n", 1), "load_balancer.backend", "kind haproxy only"},
		{"server on embedded", minimal + "hosts:\n  - {name: web-1, target: 127.0.0.1:1, server: x}\n", "hosts[0].server", "kind haproxy only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("m.yml", []byte(tc.yaml))
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want a FieldError", err)
			}
			found := false
			for _, e := range unjoin(err) {
				if errors.As(e, &fe) && fe.Field == tc.field && strings.Contains(fe.Msg, tc.msg) {
					found = true
				}
			}
			if !found {
				t.Fatalf("got %v, want field %s with %q", err, tc.field, tc.msg)
			}
		})
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

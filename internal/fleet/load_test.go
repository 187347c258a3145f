package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const minimal = `load_balancer:
  health_check:
    interval: 5s
drain:
  serve_period: 15s
  shutdown_timeout: 10s
backend:
  keepalive_idle_timeout: 75s
`

func TestLoad_Seeds(t *testing.T) {
	for _, name := range []string{"before.yml", "after.yml"} {
		t.Run(name, func(t *testing.T) {
			l, err := Load(filepath.Join("..", "..", "examples", "seed", name))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(l.Hosts) != 3 {
				t.Errorf("hosts = %d, want 3", len(l.Hosts))
			}
		})
	}
}

func TestParse_Defaults(t *testing.T) {
	l, err := Parse("m.yml", []byte(minimal))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	hc := l.LoadBalancer.HealthCheck
	if hc.Interval != 5*time.Second || hc.Timeout != 5*time.Second || hc.HealthyThreshold != 5 || hc.UnhealthyThreshold != 2 {
		t.Errorf("health check = %+v, want interval 5s from file and ALB defaults otherwise", hc)
	}
	if l.LoadBalancer.DeregistrationDelay != 300*time.Second || l.Backend.StopGracePeriod != 10*time.Second {
		t.Errorf("defaults not applied: %+v %+v", l.LoadBalancer, l.Backend)
	}
	if !l.Set["load_balancer.health_check.interval"] || l.Set["load_balancer.health_check.timeout"] {
		t.Errorf("Set = %v", l.Set)
	}
}

func TestParse_ALBPropagationDefault(t *testing.T) {
	l, err := Parse("m.yml", []byte(strings.Replace(minimal, "load_balancer:\n", "load_balancer:\n  kind: alb\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if l.LoadBalancer.PropagationMargin != albPropagationDefault {
		t.Errorf("propagation margin = %v, want %v", l.LoadBalancer.PropagationMargin, albPropagationDefault)
	}
}

func TestParse_Errors(t *testing.T) {
	cases := []struct {
		name      string
		yaml      string
		wantLine  int
		wantField string
		wantMsg   string
	}{
		{"unknown key with suggestion", strings.Replace(minimal, "  health_check:", "  helth_check:", 1), 2, "load_balancer.helth_check", `did you mean "health_check"`},
		{"missing required", "load_balancer: {}\ndrain:\n  serve_period: 15s\n  shutdown_timeout: 1s\n", 1, "backend", "required field is missing"},
		{"missing nested required", strings.Replace(minimal, "  shutdown_timeout: 10s\n", "", 1), 5, "drain.shutdown_timeout", "required"},
		{"malformed duration", strings.Replace(minimal, "interval: 5s", "interval: 5x", 1), 3, "load_balancer.health_check.interval", "malformed duration"},
		{"bare number duration", strings.Replace(minimal, "interval: 5s", "interval: 5", 1), 3, "load_balancer.health_check.interval", "bare number"},
		{"negative duration", strings.Replace(minimal, "serve_period: 15s", "serve_period: -15s", 1), 5, "drain.serve_period", "negative"},
		{"wrong type", minimal + "watchdog:\n  failures_before_heal: four\n", 10, "watchdog.failures_before_heal", "whole number"},
		{"enum", minimal + "deploy:\n  drain_mode: sideways\n", 10, "deploy.drain_mode", "must be one of"},
		{"duplicate host", minimal + "hosts:\n  - {name: a, target: 127.0.0.1:1}\n  - {name: a, target: 127.0.0.1:2}\n", 11, "hosts[1].name", "unique"},
		{"bad target", minimal + "hosts:\n  - {name: a, target: nowhere}\n", 10, "hosts[0].target", "host:port"},
		{"yaml syntax", "drain:\n  serve_period: 15s\n\tshutdown_timeout: 1s\n", 2, "(document)", "not valid YAML"},
		{"empty file", "", 0, "(document)", "file is empty"},
		{"zero interval", strings.Replace(minimal, "interval: 5s", "interval: 0s", 1), 3, "load_balancer.health_check.interval", "more than 0"},
		{"lease ttl of 876,000h (the issue)", minimal + "deploy:\n  lease_ttl: 876000h\n", 10, "deploy.lease_ttl", "longer than 1h0m0s"},
		{"min_in_service neither count nor percent", minimal + "deploy:\n  min_in_service: half\n", 10, "deploy.min_in_service", "percentage"},
		{"min_in_service over 100%", minimal + "deploy:\n  min_in_service: 150%\n", 10, "deploy.min_in_service", "1% to 100%"},
		{"two hosts, one agent", minimal + "hosts:\n  - {name: a, target: 127.0.0.1:1, agent: 127.0.0.1:9}\n  - {name: b, target: 127.0.0.1:2, agent: 127.0.0.1:9}\n", 11, "hosts[1].agent", "also used by hosts[0].agent"},
		{"two hosts, one agent through one ssh", minimal + "hosts:\n  - {name: a, target: 10.0.0.5:1, agent: 127.0.0.1:9, ssh: deploy@10.0.0.5}\n  - {name: b, target: 10.0.0.5:2, agent: 127.0.0.1:9, ssh: ops@10.0.0.5}\n", 11, "hosts[1].agent", "also used by hosts[0].agent"},
		{"target on the LB's port", minimal + "hosts:\n  - {name: a, target: 127.0.0.1:8080}\n", 10, "hosts[0].target", "also used by load_balancer.listen"},
		{"empty target service", minimal + "deploy:\n  target_services: [\"\"]\n", 10, "deploy.target_services[0]", "empty name"},
		{"propagation max below margin", strings.Replace(minimal, "load_balancer:\n", "load_balancer:\n  propagation_margin: 15s\n  propagation_max: 10s\n", 1), 3, "load_balancer.propagation_max", "at least propagation_margin (15s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("m.yml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("Parse succeeded, want error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FieldError", err)
			}
			if fe.Field != tc.wantField || fe.Line != tc.wantLine || !strings.Contains(fe.Msg, tc.wantMsg) {
				t.Errorf("got %q (field %s line %d), want field %s line %d containing %q", err, fe.Field, fe.Line, tc.wantField, tc.wantLine, tc.wantMsg)
			}
			if !strings.HasPrefix(err.Error(), "m.yml:") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// TestParse_AgentPerMachine: through SSH, every host's agent may listen on
// the same loopback address of its own machine (the README's SSH fleet).
func TestParse_AgentPerMachine(t *testing.T) {
	y := minimal + "hosts:\n  - {name: a, target: 10.0.0.5:8080, agent: 127.0.0.1:9200, ssh: deploy@10.0.0.5}\n  - {name: b, target: 10.0.0.6:8080, agent: 127.0.0.1:9200, ssh: deploy@10.0.0.6}\n"
	if _, err := Parse("m.yml", []byte(y)); err != nil {
		t.Fatalf("two SSH hosts with their agents on their own loopback: %v", err)
	}
}

func TestLoad_MissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want ErrNotExist", err)
	}
}

func TestConfig_Scaled(t *testing.T) {
	l, err := Parse("m.yml", []byte(minimal+"hosts:\n  - {name: a, target: 127.0.0.1:1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := l.Config.Scaled(0.1)
	if s.Drain.ServePeriod != 1500*time.Millisecond || s.LoadBalancer.HealthCheck.Interval != 500*time.Millisecond {
		t.Errorf("scaled = %v %v", s.Drain.ServePeriod, s.LoadBalancer.HealthCheck.Interval)
	}
	if s.LoadBalancer.HealthCheck.UnhealthyThreshold != 2 {
		t.Errorf("thresholds must not scale")
	}
	if l.Drain.ServePeriod != 15*time.Second {
		t.Errorf("original modified")
	}
	s.Hosts[0].Name = "b"
	if l.Hosts[0].Name != "a" {
		t.Errorf("hosts shared")
	}
}

func TestParse_HostVars(t *testing.T) {
	l, err := Parse("m.yml", []byte(minimal+"hosts:\n  - name: a\n    target: 127.0.0.1:1\n    vars: {API_PORT: 9111, MODE: fast}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Hosts[0].Vars; got["API_PORT"] != "9111" || got["MODE"] != "fast" {
		t.Errorf("vars = %v", got)
	}
	cases := []struct {
		name, vars, wantField, wantMsg string
	}{
		{"reserved prefix", "{MYTHEX_VERSION: v1}", "hosts[0].vars.MYTHEX_VERSION", "reserved"},
		{"bad name", "{1PORT: 1}", "hosts[0].vars.1PORT", "not valid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("m.yml", []byte(minimal+"hosts:\n  - name: a\n    target: 127.0.0.1:1\n    vars: "+tc.vars+"\n"))
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.wantField || !strings.Contains(fe.Msg, tc.wantMsg) {
				t.Errorf("err = %v, want field %s containing %q", err, tc.wantField, tc.wantMsg)
			}
		})
	}
}

func TestParse_TimingConcepts(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string
		check func(l *Loaded) bool
	}{
		{"serve period 0: a service that stops accepting at SIGTERM",
			strings.Replace(minimal, "serve_period: 15s", "serve_period: 0s", 1),
			func(l *Loaded) bool { return l.Drain.ServePeriod == 0 }},
		{"kind other",
			strings.Replace(minimal, "load_balancer:\n", "load_balancer:\n  kind: other\n", 1),
			func(l *Loaded) bool { return l.LoadBalancer.Kind == KindOther && l.LoadBalancer.PropagationMargin == 0 }},
		{"propagation max above margin",
			strings.Replace(minimal, "load_balancer:\n", "load_balancer:\n  kind: alb\n  propagation_max: 60s\n", 1),
			func(l *Loaded) bool {
				return l.LoadBalancer.PropagationMax == 60*time.Second && l.LoadBalancer.PropagationMargin == albPropagationDefault
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Parse("m.yml", []byte(tc.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !tc.check(l) {
				t.Errorf("loaded %+v", l.Config)
			}
		})
	}
}

func TestConfig_ValidateNegative(t *testing.T) {
	l, err := Parse("m.yml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	c.Drain.PreStop = -time.Second
	err = c.Validate()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "drain.pre_stop" || !errors.Is(err, ErrInvalid) {
		t.Errorf("Validate = %v, want a drain.pre_stop FieldError", err)
	}
}

func TestParse_DeployDefaults(t *testing.T) {
	l, err := Parse("m.yml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	d := l.Deploy
	if d.MinHealthyTime != 10*time.Second || d.MinInService != "1" || len(d.TargetServices) != 1 || d.TargetServices[0] != "gateway" {
		t.Errorf("deploy defaults = %+v; want min_healthy_time 10s (Nomad), min_in_service 1, target_services [gateway]", d)
	}
	l, err = Parse("m.yml", []byte(minimal+"deploy:\n  target_services: [web, admin]\n  min_in_service: 50%\n  min_healthy_time: 0s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Deploy.TargetServices; len(got) != 2 || got[0] != "web" || got[1] != "admin" {
		t.Errorf("target_services = %v, want [web admin] (the file's list replaces the default)", got)
	}
	if n, err := l.Deploy.InService(3); err != nil || n != 2 {
		t.Errorf("50%% of 3 = %d, %v; want 2", n, err)
	}
	if l.Deploy.MinHealthyTime != 0 {
		t.Errorf("min_healthy_time = %v, want 0 as set", l.Deploy.MinHealthyTime)
	}
}

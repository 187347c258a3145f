package fly

import (
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/nativecfg"
	"github.com/mythex/mythex/internal/timing"
)

func TestRead(t *testing.T) {
	cases := []struct {
		name   string
		toml   string
		grace  time.Duration
		line   int
		assume string
	}{
		{"string", "app = \"a\"\nkill_timeout = \"30s\"\n", 30 * time.Second, 2, ""},
		{"whole seconds", "app = \"a\"\n\nkill_timeout = 120\n", 120 * time.Second, 3, ""},
		{"default", "app = \"a\"\n", 5 * time.Second, 0, "kill_timeout not set: Fly's default 5s assumed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			subs, err := Read("fly.toml", []byte(tc.toml))
			if err != nil {
				t.Fatal(err)
			}
			s := subs[0]
			if s.Config.Backend.StopGracePeriod != tc.grace || s.StopTimeoutName != "kill_timeout" {
				t.Errorf("grace %v", s.Config.Backend.StopGracePeriod)
			}
			if tc.line > 0 && s.Bindings[0].Loc.Line != tc.line {
				t.Errorf("line %d, want %d", s.Bindings[0].Loc.Line, tc.line)
			}
			if tc.assume != "" && !strings.Contains(strings.Join(s.Assumptions(), "\n"), tc.assume) {
				t.Errorf("assumptions %q", s.Assumptions())
			}
		})
	}
}

func TestRead_ChecksAndFacts(t *testing.T) {
	src := `app = "shop"
[http_service]
  internal_port = 8080
  [[http_service.checks]]
    interval = "10s"
    timeout = "3s"
[env]
  MYTHEX_LONGEST_REQUEST = "30s"
`
	subs, err := Read("fly.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	c := subs[0].Config
	if c.LoadBalancer.HealthCheck.Interval != 10*time.Second || c.LoadBalancer.HealthCheck.Timeout != 3*time.Second ||
		c.Backend.LongestRequest != 30*time.Second || c.Drain.ShutdownTimeout != 30*time.Second {
		t.Errorf("config %+v %+v", c.LoadBalancer.HealthCheck, c.Backend)
	}
}

func TestRead_BadInput(t *testing.T) {
	for name, src := range map[string]string{
		"not TOML":     "app = \n[[",
		"bad duration": "kill_timeout = \"soon\"\n",
		"bad env fact": "[env]\nMYTHEX_SERVE_PERIOD = \"x\"\n",
	} {
		if _, err := Read("fly.toml", []byte(src)); err == nil || !strings.Contains(err.Error(), "fly.toml") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestJudge_ProxyLagAndCallTimeout(t *testing.T) {
	cases := []struct {
		name  string
		toml  string
		want  timing.Level
		names []string
		fixTo string
	}{
		{"closing at the signal is marginal", "app = \"a\"\nkill_timeout = \"30s\"\n", timing.Marginal, []string{"overlap"}, ""},
		{"serving past the lag passes", "app = \"a\"\nkill_timeout = \"30s\"\n[env]\nMYTHEX_SERVE_PERIOD = \"5s\"\n", timing.Pass, nil, ""},
		{"a kill_timeout over publish's call timeout fails", "app = \"a\"\nkill_timeout = 120\n[env]\nMYTHEX_SERVE_PERIOD = \"5s\"\n", timing.Fail, []string{"call-timeout"}, "44s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			subs, err := Read("fly.toml", []byte(tc.toml))
			if err != nil {
				t.Fatal(err)
			}
			s := subs[0]
			s.AddCallTimeout(45 * time.Second)
			v := nativecfg.Judge(s)
			var got []string
			for _, f := range v.Findings {
				got = append(got, f.Invariant)
			}
			if v.Level != tc.want || strings.Join(got, ",") != strings.Join(tc.names, ",") {
				t.Fatalf("level %v findings %v, want %v %v", v.Level, got, tc.want, tc.names)
			}
			if tc.fixTo != "" {
				f := v.Findings[0]
				if f.Loc.Line != 2 || f.Loc.Path != "kill_timeout" || len(f.Fix) != 1 || f.Fix[0].To != tc.fixTo || f.Fix[0].AtLeast {
					t.Errorf("finding %+v", f)
				}
			}
		})
	}
}

package kamal

import (
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/nativecfg"
	"github.com/mythex/mythex/internal/timing"
)

func TestRead_ResponseTimeoutWithinDrain(t *testing.T) {
	cases := []struct {
		name string
		yml  string
		want timing.Level
		line int
		fix  string
	}{
		{"defaults: 30 within 30", "service: shop\nimage: x\n", timing.Pass, 0, ""},
		{"a 60s response over a 20s drain", "service: shop\nimage: x\ndrain_timeout: 20\nproxy:\n  response_timeout: 60\n", timing.Fail, 3, "60"},
		{"drain raised", "service: shop\nimage: x\ndrain_timeout: 60\nproxy:\n  response_timeout: 60\n", timing.Pass, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			subs, err := Read("config/deploy.yml", []byte(tc.yml))
			if err != nil {
				t.Fatal(err)
			}
			v := nativecfg.Judge(subs[0])
			if v.Level != tc.want {
				t.Fatalf("level %v, want %v: %+v", v.Level, tc.want, v.Findings)
			}
			if tc.want != timing.Fail {
				return
			}
			f := v.Findings[0]
			if f.Invariant != "drain" || f.Loc.Line != tc.line || f.Loc.Path != "drain_timeout" || f.Current != "20" || len(f.Fix) != 1 || f.Fix[0].To != tc.fix {
				t.Errorf("finding %+v", f)
			}
		})
	}
}

func TestRead_Model(t *testing.T) {
	subs, err := Read("deploy.yml", []byte("service: shop\nimage: x\ndrain_timeout: 25\nproxy:\n  healthcheck:\n    interval: 3\n    timeout: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := subs[0].Config
	if c.LoadBalancer.DeregistrationDelay != 25*time.Second || c.LoadBalancer.PropagationMargin != 0 ||
		c.LoadBalancer.HealthCheck.Interval != 3*time.Second || c.Backend.StopGracePeriod != 35*time.Second {
		t.Errorf("lb %+v grace %v", c.LoadBalancer, c.Backend.StopGracePeriod)
	}
	if _, err := Read("deploy.yml", []byte("service: [")); err == nil || !strings.Contains(err.Error(), "deploy.yml") {
		t.Errorf("bad YAML: err = %v", err)
	}
}

package compose

import (
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/nativecfg"
	"github.com/mythex/mythex/internal/timing"
)

func TestRead_TraefikLag(t *testing.T) {
	cases := []struct {
		name   string
		yml    string
		margin time.Duration
		judged bool
	}{
		{"Swarm provider default poll", "services:\n  traefik:\n    image: traefik:v3\n    command: [--providers.swarm.endpoint=unix:///var/run/docker.sock]\n  web:\n    image: web\n    deploy:\n      labels: [traefik.enable=true]\n", 15 * time.Second, true},
		{"Swarm provider 1s poll", "services:\n  traefik:\n    image: traefik:v3\n    command: [--providers.swarm.refreshSeconds=1]\n  web:\n    image: web\n    deploy:\n      labels: [traefik.enable=true]\n", time.Second, true},
		{"Docker provider events", "services:\n  web:\n    image: web\n    labels:\n      traefik.enable: \"true\"\n", time.Second, true},
		{"no proxy", "services:\n  web:\n    image: web\n", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			subs, err := Read("compose.yaml", []byte(tc.yml))
			if err != nil || len(subs) != 1 {
				t.Fatalf("subs %d err %v", len(subs), err)
			}
			s := subs[0]
			if s.Config.LoadBalancer.PropagationMargin != tc.margin || (s.Unjudged["overlap"] == "") != tc.judged {
				t.Errorf("margin %v unjudged %v", s.Config.LoadBalancer.PropagationMargin, s.Unjudged)
			}
		})
	}
}

// TestRead_StopGrace: Docker's 10 s default is assumed and named; a 60 s
// request declared as a fact cannot finish in it.
func TestRead_StopGrace(t *testing.T) {
	yml := "services:\n  api:\n    image: api\n    labels:\n      mythex.dev/longest-request: 60s\n"
	subs, err := Read("compose.yaml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	v := nativecfg.Judge(subs[0])
	if v.Level != timing.Fail || len(v.Findings) != 1 {
		t.Fatalf("verdict %v %+v", v.Level, v.Findings)
	}
	f := v.Findings[0]
	if f.Loc.Path != "services.api.stop_grace_period" || !f.Assumed || f.Current != "10s" || len(f.Fix) != 1 || f.Fix[0].To != "60s" {
		t.Errorf("finding %+v", f)
	}
	if _, err := Read("compose.yaml", []byte("services:\n  api:\n    image: api\n    stop_grace_period: soon\n")); err == nil || !strings.Contains(err.Error(), "compose.yaml") {
		t.Errorf("bad duration: err = %v", err)
	}
}

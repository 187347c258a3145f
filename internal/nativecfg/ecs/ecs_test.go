package ecs

import (
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/nativecfg"
)

const task = `{
  "taskDefinition": {
    "family": "shop",
    "containerDefinitions": [
      {"name": "log", "image": "fluent"},
      {"name": "app", "image": "shop", "portMappings": [{"containerPort": 8080}], "stopTimeout": 10,
       "dockerLabels": {"mythex.dev/shutdown-timeout": "30s"}}
    ]
  }
}`

const tg = `{"TargetGroups": [{"TargetGroupArn": "arn:x", "TargetType": "ip", "HealthCheckIntervalSeconds": 10,
  "HealthCheckTimeoutSeconds": 5, "HealthyThresholdCount": 2, "UnhealthyThresholdCount": 3}]}`

const attrs = `{"Attributes": [{"Key": "deregistration_delay.timeout_seconds", "Value": "20"}]}`

const svcJSON = `{"services": [{"serviceName": "shop-svc", "healthCheckGracePeriodSeconds": 60,
  "loadBalancers": [{"targetGroupArn": "arn:x"}]}]}`

// TestRead_DrainsBeforeSIGTERM: ECS waits for the target to drain, then
// sends SIGTERM; stopTimeout runs after the drain.
func TestRead_DrainsBeforeSIGTERM(t *testing.T) {
	subs, err := Read(map[string][]byte{"task.json": []byte(task), "tg.json": []byte(tg), "attrs.json": []byte(attrs), "svc.json": []byte(svcJSON)})
	if err != nil || len(subs) != 1 {
		t.Fatalf("subs %d err %v", len(subs), err)
	}
	s := subs[0]
	c := s.Config
	if s.Name != "service shop-svc (task definition shop)" {
		t.Errorf("name %q", s.Name)
	}
	if c.Drain.PreStop != 20*time.Second || c.Backend.StopGracePeriod != 30*time.Second || c.LoadBalancer.Kind != fleet.KindALB ||
		c.LoadBalancer.HealthCheck.UnhealthyThreshold != 3 {
		t.Fatalf("pre_stop %v grace %v lb %+v", c.Drain.PreStop, c.Backend.StopGracePeriod, c.LoadBalancer)
	}
	v := nativecfg.Judge(s)
	if len(v.Findings) != 1 || v.Findings[0].Invariant != "grace" {
		t.Fatalf("findings %+v", v.Findings)
	}
	f := v.Findings[0]
	if f.Loc.Path != "taskDefinition.containerDefinitions[1].stopTimeout" || f.Loc.Line != 6 || f.Current != "10" ||
		len(f.Fix) != 1 || f.Fix[0].To != "30" {
		t.Errorf("finding %+v", f)
	}
}

func TestRead_Defaults(t *testing.T) {
	subs, err := Read(map[string][]byte{"task.json": []byte(`{"family": "f", "containerDefinitions": [{"name": "a", "image": "x"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	c := subs[0].Config
	if c.LoadBalancer.DeregistrationDelay != 300*time.Second || c.Backend.StopGracePeriod != 330*time.Second {
		t.Errorf("delay %v grace %v", c.LoadBalancer.DeregistrationDelay, c.Backend.StopGracePeriod)
	}
	a := strings.Join(subs[0].Assumptions(), "\n")
	for _, want := range []string{"stopTimeout not set: ECS's default 30", "deregistration_delay.timeout_seconds not set: the ALB's default 300"} {
		if !strings.Contains(a, want) {
			t.Errorf("assumptions %q lack %q", a, want)
		}
	}
}

func TestRead_BadInput(t *testing.T) {
	for name, files := range map[string]map[string][]byte{
		"no task definition": {"tg.json": []byte(tg)},
		"not JSON":           {"task.json": []byte("{")},
		"bad delay":          {"task.json": []byte(task), "attrs.json": []byte(strings.Replace(attrs, `"20"`, `"soon"`, 1))},
		"no containers":      {"task.json": []byte(`{"family": "f", "containerDefinitions": []}`)},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Read(files); err == nil || !strings.Contains(err.Error(), ".json") {
				t.Errorf("err = %v", err)
			}
		})
	}
}

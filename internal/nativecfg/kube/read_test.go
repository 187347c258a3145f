package kube

import (
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/fleet"
	"github.com/mythex/mythex/internal/nativecfg"
)

const sec = time.Second

func deployment(podSpec string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
` + podSpec
}

const svc = `---
apiVersion: v1
kind: Service
metadata:
  name: web
  annotations: {alb.ingress.kubernetes.io/healthcheck-interval-seconds: "10"}
spec: {selector: {app: web}}
`

const albIngress = `---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  annotations:
    alb.ingress.kubernetes.io/target-type: ip
    alb.ingress.kubernetes.io/healthcheck-interval-seconds: "20"
    alb.ingress.kubernetes.io/target-group-attributes: slow_start.duration_seconds=0,deregistration_delay.timeout_seconds=45
spec:
  ingressClassName: alb
  rules:
    - http:
        paths:
          - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
`

func readOne(t *testing.T, yaml string) *nativecfg.Subject {
	t.Helper()
	subs, _, err := Read(map[string][]byte{"m.yaml": []byte(yaml)})
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 1 {
		t.Fatalf("%d subjects, want 1", len(subs))
	}
	return subs[0]
}

func TestRead_PodTermination(t *testing.T) {
	cases := []struct {
		name    string
		pod     string
		preStop time.Duration
		grace   time.Duration
		assumed string
	}{
		{"defaults: no preStop, grace 30 assumed", "      containers: [{name: a, image: x}]\n", 0, 30 * sec, "terminationGracePeriodSeconds not set: Kubernetes' default 30 assumed"},
		{"sleep action", "      terminationGracePeriodSeconds: 45\n      containers: [{name: a, image: x, lifecycle: {preStop: {sleep: {seconds: 20}}}}]\n", 20 * sec, 45 * sec, ""},
		{"exec sleep through a shell", "      containers: [{name: a, image: x, lifecycle: {preStop: {exec: {command: [/bin/sh, -c, \"sleep 15 && nginx -s quit\"]}}}}]\n", 15 * sec, 30 * sec, ""},
		{"exec sleep directly, fractional", "      containers: [{name: a, image: x, lifecycle: {preStop: {exec: {command: [sleep, \"2.5\"]}}}}]\n", 2500 * time.Millisecond, 30 * sec, ""},
		{"the container with the hook", "      containers: [{name: side, image: z}, {name: a, image: x, lifecycle: {preStop: {sleep: {seconds: 7}}}}]\n", 7 * sec, 30 * sec, ""},
		{"an httpGet hook counts as 0", "      containers: [{name: a, image: x, lifecycle: {preStop: {httpGet: {path: /drain, port: 8080}}}}]\n", 0, 30 * sec, "preStop not set: a hook of unknown length: 0 assumed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := readOne(t, deployment(tc.pod))
			if s.Config.Drain.PreStop != tc.preStop || s.Config.Backend.StopGracePeriod != tc.grace {
				t.Errorf("pre_stop %v grace %v, want %v %v", s.Config.Drain.PreStop, s.Config.Backend.StopGracePeriod, tc.preStop, tc.grace)
			}
			if tc.assumed != "" && !strings.Contains(strings.Join(s.Assumptions(), "\n"), tc.assumed) {
				t.Errorf("assumptions %q lack %q", s.Assumptions(), tc.assumed)
			}
		})
	}
}

func TestRead_LoadBalancer(t *testing.T) {
	pod := "      containers: [{name: a, image: x}]\n"
	cases := []struct {
		name      string
		yaml      string
		kind, tt  string
		margin    time.Duration
		interval  time.Duration
		deregistr time.Duration
	}{
		{"no Service: endpoint lag assumed", deployment(pod), fleet.KindOther, fleet.TargetTypeIP, 2 * sec, 10 * sec, 300 * sec},
		{"ALB Ingress: the Service's annotation overrides the Ingress's", deployment(pod) + svc + albIngress, fleet.KindALB, fleet.TargetTypeIP, 15 * sec, 10 * sec, 45 * sec},
		{"ingress-nginx", deployment(pod) + svc + `---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  ingressClassName: nginx
  defaultBackend: {service: {name: web, port: {number: 80}}}
`, fleet.KindOther, fleet.TargetTypeIP, 2 * sec, 10 * sec, 300 * sec},
		{"TargetGroupBinding with ip targets", deployment(pod) + `---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}}
---
apiVersion: elbv2.k8s.aws/v1beta1
kind: TargetGroupBinding
metadata: {name: web}
spec: {serviceRef: {name: web, port: 80}, targetGroupARN: "arn:aws:elasticloadbalancing:x", targetType: ip}
`, fleet.KindALB, fleet.TargetTypeIP, 15 * sec, 15 * sec, 300 * sec},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := readOne(t, tc.yaml)
			lb := s.Config.LoadBalancer
			if lb.Kind != tc.kind || lb.TargetType != tc.tt || lb.PropagationMargin != tc.margin ||
				lb.HealthCheck.Interval != tc.interval || lb.DeregistrationDelay != tc.deregistr {
				t.Errorf("got %s %s margin %v interval %v delay %v", lb.Kind, lb.TargetType, lb.PropagationMargin, lb.HealthCheck.Interval, lb.DeregistrationDelay)
			}
		})
	}
}

// TestRead_FindingLines: a finding points at the key's line in its document,
// counted from the top of a multi-document file.
func TestRead_FindingLines(t *testing.T) {
	y := "# a comment\n---\n" + deployment("      terminationGracePeriodSeconds: 60\n      containers:\n        - name: a\n          image: x\n          lifecycle:\n            preStop:\n              sleep:\n                seconds: 25\n") + svc + albIngress
	s := readOne(t, y)
	v := nativecfg.Judge(s)
	if len(v.Findings) != 1 {
		t.Fatalf("findings %+v", v.Findings)
	}
	f := v.Findings[0]
	if f.Loc.Line != 18 || f.Loc.Path != "spec.template.spec.containers[0].lifecycle.preStop.sleep.seconds" || f.Current != "25" {
		t.Errorf("finding at %v = %q", f.Loc, f.Current)
	}
	if len(f.Fix) != 1 || f.Fix[0].To != "46" || !f.Fix[0].AtLeast {
		t.Errorf("fix %+v, want preStop at least 46 (over the 45 s delay)", f.Fix)
	}
}

func TestRead_List(t *testing.T) {
	y := `apiVersion: v1
kind: List
items:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {terminationGracePeriodSeconds: 50, containers: [{name: a, image: x}]}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: c}
`
	subs, ignored, err := Read(map[string][]byte{"l.yaml": []byte(y)})
	if err != nil || len(subs) != 1 || ignored != 1 || subs[0].Config.Backend.StopGracePeriod != 50*sec {
		t.Fatalf("subs %d ignored %d err %v", len(subs), ignored, err)
	}
}

func TestRead_BadInput(t *testing.T) {
	cases := map[string]string{
		"no kind":              "apiVersion: v1\nmetadata: {name: x}\n",
		"bad YAML":             "apiVersion: v1\nkind: [\n",
		"a non-number":         deployment("      terminationGracePeriodSeconds: soon\n      containers: [{name: a, image: x}]\n"),
		"no containers":        deployment("      containers: []\n"),
		"bad target type":      deployment("      containers: [{name: a, image: x}]\n") + svc + strings.Replace(albIngress, "target-type: ip", "target-type: pod", 1),
		"bad attribute number": deployment("      containers: [{name: a, image: x}]\n") + svc + strings.Replace(albIngress, "timeout_seconds=45", "timeout_seconds=soon", 1),
	}
	for name, y := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, err := Read(map[string][]byte{"m.yaml": []byte(y)}); err == nil || !strings.Contains(err.Error(), "m.yaml") {
				t.Errorf("err = %v, want an error naming the file", err)
			}
		})
	}
}

// TestRead_LongestRequestAgainstIdleTimeout: issue 13's missing relation — a
// request longer than the ALB's idle timeout is cut (504) even when the app's
// keep-alive is unknown.
func TestRead_LongestRequestAgainstIdleTimeout(t *testing.T) {
	pod := "      terminationGracePeriodSeconds: 200\n      containers: [{name: a, image: x, lifecycle: {preStop: {sleep: {seconds: 50}}}}]\n"
	y := deployment(pod) + svc + albIngress
	y = strings.Replace(y, "    metadata: {labels: {app: web}}\n", "    metadata:\n      labels: {app: web}\n      annotations: {mythex.dev/longest-request: 90s}\n", 1)
	s := readOne(t, y)
	v := nativecfg.Judge(s)
	var got []string
	for _, f := range v.Findings {
		got = append(got, f.Invariant+": "+f.Relation)
	}
	// Both the idle timeout (504) and the deregistration delay (the ALB cuts
	// a draining target's requests when it ends) are too short for 90s.
	want := []string{"grace: propagation_margin 15s + longest_request 90s = 105s ≤ deregistration_delay 45s",
		"keep-alive: longest_request 90s < idle_timeout 60s"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings %q, want %q", got, want)
	}
	if v.Unjudged["keep-alive"] != "" {
		t.Error("keep-alive should be judged for the longest request")
	}
}

package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/termui"
)

// exitCodeOf maps a subcommand's error to its exit status.
func exitCodeOf(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

const k8sIPShort = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 60
      containers:
        - name: app
          image: web:1
          lifecycle:
            preStop:
              sleep:
                seconds: 25
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  annotations:
    alb.ingress.kubernetes.io/target-type: ip
    alb.ingress.kubernetes.io/target-group-attributes: deregistration_delay.timeout_seconds=30
spec:
  ingressClassName: alb
  defaultBackend: {service: {name: web, port: {number: 80}}}
`

// k8sMarginal: instance targets, a 40 s preStop — past the typical
// propagation, short of the longest seen.
const k8sMarginal = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 70
      containers:
        - name: app
          image: web:1
          lifecycle: {preStop: {sleep: {seconds: 40}}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, annotations: {alb.ingress.kubernetes.io/target-type: instance}}
spec:
  ingressClassName: alb
  defaultBackend: {service: {name: web, port: {number: 80}}}
`

func writeTemp(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunNativeCheck_ExitStatus(t *testing.T) {
	fail := writeTemp(t, "deployment.yaml", k8sIPShort)
	marginal := writeTemp(t, "deployment.yaml", k8sMarginal)
	junk := writeTemp(t, "notes.yaml", "title: not a config\n")
	cases := []struct {
		name   string
		paths  []string
		strict bool
		want   int
		out    string
	}{
		{"failing finding exits 1", []string{fail}, false, exitFailed,
			"deployment.yaml:16 spec.template.spec.containers[0].lifecycle.preStop.sleep.seconds is 25"},
		{"the fix", []string{fail}, false, exitFailed, "before that (502s on every deploy): set it to at least 31"},
		{"marginal passes", []string{marginal}, false, exitOK, "(marginal does not fail without --strict)"},
		{"marginal fails with --strict", []string{marginal}, true, exitFailed, "1 marginal"},
		{"a file of no known kind exits 2", []string{junk}, false, exitBadUse, ""},
		{"a directory of nothing known exits 2", []string{filepath.Dir(junk)}, false, exitBadUse, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			err := runNativeCheck(&out, strings.NewReader(""), tc.paths, nativeOpts{format: formatText, strict: tc.strict, callTimeout: 45 * time.Second})
			if got := exitCodeOf(err); got != tc.want {
				t.Fatalf("exit %d, want %d (err %v)\n%s", got, tc.want, err, out.String())
			}
			if tc.want == exitBadUse {
				if err == nil || !strings.Contains(err.Error(), "recognised") {
					t.Errorf("error %v should say what is recognised", err)
				}
				return
			}
			if flat := strings.Join(strings.Fields(out.String()), " "); !strings.Contains(flat, tc.out) {
				t.Errorf("output lacks %q:\n%s", tc.out, out.String())
			}
		})
	}
}

func TestRunNativeCheck_Stdin(t *testing.T) {
	var out strings.Builder
	err := runNativeCheck(&out, strings.NewReader(k8sIPShort), []string{"-"}, nativeOpts{format: formatText})
	if exitCodeOf(err) != exitFailed || !strings.Contains(strings.Join(strings.Fields(out.String()), " "), "-:16 spec.template.spec.containers[0]") {
		t.Errorf("exit %d:\n%s", exitCodeOf(err), out.String())
	}
}

func TestRunNativeCheck_GitHub(t *testing.T) {
	p := writeTemp(t, "deployment.yaml", k8sIPShort)
	var out strings.Builder
	err := runNativeCheck(&out, nil, []string{p}, nativeOpts{format: formatGitHub})
	if exitCodeOf(err) != exitFailed {
		t.Fatalf("exit %d", exitCodeOf(err))
	}
	want := "::error file=" + termui.GitHubEscapeProp(p) + ",line=16,title=mythex check overlap%3A Deployment default/web::"
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("got %q, want prefix %q", out.String(), want)
	}
	if strings.Count(out.String(), "\n") != 1 {
		t.Errorf("want one annotation line, got %q", out.String())
	}
}

func TestRunNativeCheck_JSON(t *testing.T) {
	p := writeTemp(t, "deployment.yaml", k8sIPShort)
	var out strings.Builder
	_ = runNativeCheck(&out, nil, []string{p}, nativeOpts{format: formatJSON})
	var got struct {
		OK    bool   `json:"ok"`
		Level string `json:"level"`
		Units []struct {
			Platform string `json:"platform"`
			Findings []struct {
				Invariant string `json:"invariant"`
				Level     string `json:"level"`
				Current   string `json:"current"`
				Location  struct {
					Line int    `json:"line"`
					Path string `json:"path"`
				} `json:"location"`
				Fix []struct {
					AtLeast bool   `json:"at_least"`
					To      string `json:"to"`
				} `json:"fix"`
			} `json:"findings"`
			Assumed []string `json:"assumed"`
		} `json:"units"`
	}
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if got.OK || got.Level != "fail" || len(got.Units) != 1 || got.Units[0].Platform != "kubernetes" {
		t.Fatalf("got %+v", got)
	}
	f := got.Units[0].Findings
	if len(f) != 1 || f[0].Invariant != "overlap" || f[0].Current != "25" || f[0].Location.Line != 16 ||
		len(f[0].Fix) != 1 || !f[0].Fix[0].AtLeast || f[0].Fix[0].To != "31" {
		t.Errorf("findings %+v", f)
	}
	if len(got.Units[0].Assumed) == 0 {
		t.Error("the ALB's default health check should be listed as assumed")
	}
}

// TestRunNativeCheck_PublicCases runs `mythex check DIR` on every public-case
// fixture and checks the exit status its stated verdict implies: 1 for FAIL,
// 0 for PASS and MARGINAL, and 1 for MARGINAL under --strict.
func TestRunNativeCheck_PublicCases(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "internal", "nativecfg", "inputs", "testdata", "cases", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(dir, "*"))
			var verdict string
			for _, f := range files {
				b, _ := os.ReadFile(f)
				if _, v, ok := strings.Cut(string(b), "Expected verdict: "); ok {
					verdict, _, _ = strings.Cut(v, " ")
				}
			}
			for _, strict := range []bool{false, true} {
				want := exitOK
				if verdict == "FAIL" || (strict && verdict == "MARGINAL") {
					want = exitFailed
				}
				var out strings.Builder
				err := runNativeCheck(&out, nil, []string{dir}, nativeOpts{format: formatText, strict: strict})
				if got := exitCodeOf(err); got != want {
					t.Errorf("verdict %s, strict %v: exit %d, want %d\n%s", verdict, strict, got, want, out.String())
				}
			}
		})
	}
}

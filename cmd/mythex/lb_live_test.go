package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/lb"
	"github.com/mythex/mythex/internal/testbin"
)

var standKey = lb.KeyPair{AccessKeyID: "AKIAMYTHEXCMDTEST001", SecretAccessKey: "cmd/test/secret"}

// albStand is an embedded LB answering the ELBv2 API on an httptest server,
// standing in for an ALB.
type albStand struct {
	srv      *lb.Server
	endpoint string
	arn      string
}

func newALBStand(t *testing.T, s lb.Settings, throttle float64) *albStand {
	t.Helper()
	srv, err := lb.New(lb.Options{Settings: s, Token: "tok", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ELBv2: &lb.ELBv2Options{Key: standKey, Throttle: throttle}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Group.Close)
	admin := httptest.NewServer(srv.Admin())
	t.Cleanup(admin.Close)
	return &albStand{srv: srv, endpoint: admin.URL, arn: srv.TargetGroupARN}
}

// albEnv is the environment of a mythex (or aws) process that signs with
// key: credentials only from the environment, no shared files, no instance
// metadata.
func albEnv(key lb.KeyPair) []string {
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return append(env, "AWS_ACCESS_KEY_ID="+key.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+key.SecretAccessKey,
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true")
}

// liveSettings are ALB-valid numbers that pass mythex check for kind alb
// with propagation_margin 0.
func liveSettings() lb.Settings {
	return lb.Settings{HealthCheckPath: "/healthz", HealthCheckInterval: 5 * time.Second, HealthCheckTimeout: 2 * time.Second,
		Thresholds: lb.Thresholds{Healthy: 2, Unhealthy: 2}, DeregistrationDelay: 30 * time.Second, IdleTimeout: time.Minute,
		ConnectTimeout: time.Second, Algorithm: lb.RoundRobin, MaxBodySize: lb.DefaultMaxBodySize}
}

func albConfig(t *testing.T, endpoint, arn string) string {
	t.Helper()
	yml := fmt.Sprintf(`hosts:
  - {name: web-1, target: 127.0.0.1:9101}
  - {name: web-2, target: 127.0.0.1:9102}
load_balancer:
  kind: alb
  target_type: ip
  target_group_arn: %s
  endpoint: %s
  propagation_margin: 0s
  health_check: {path: /healthz, interval: 5s, timeout: 2s, healthy_threshold: 2, unhealthy_threshold: 2}
  deregistration_delay: 30s
  idle_timeout: 60s
drain: {serve_period: 15s, shutdown_timeout: 10s}
backend: {keepalive_idle_timeout: 75s, stop_grace_period: 30s}
`, arn, endpoint)
	p := filepath.Join(t.TempDir(), "mythex.yml")
	if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runMythexEnv runs the mythex binary with env and returns its output and exit
// code.
func runMythexEnv(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code := runMythexTo(t, env, &out, &out, args...)
	return out.String(), code
}

// runMythexSplit runs the mythex binary like runMythexEnv and returns its
// exit code, stdout and stderr apart — runCLI's results, from a process of
// its own, so that a test using it may run in parallel (runCLI swaps the
// test process's os.Stdout).
func runMythexSplit(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runMythexTo(t, env, &out, &errOut, args...)
	return code, out.String(), errOut.String()
}

// runMythexTo runs the mythex CLI as a process of its own (this test
// binary, mythexEnv) with env and args, its stdout and stderr to the
// writers given, and returns its exit status (testbin.Run).
func runMythexTo(t *testing.T, env []string, stdout, stderr io.Writer, args ...string) int {
	t.Helper()
	code, err := testbin.Run(os.Args[0], mythexEnv(env), stdout, stderr, args...)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func TestCheckLive_DriftAndApply(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the mythex binary")
	}
	t.Parallel() // its own stand; every command a process of its own
	st := newALBStand(t, liveSettings(), 0)
	cfg := albConfig(t, st.endpoint, st.arn)
	env := albEnv(standKey)

	if out, code := runMythexEnv(t, env, "check", "--live", "-f", cfg); code != 0 || !strings.Contains(out, "matches mythex.yml") {
		t.Fatalf("check --live on a matching target group: exit %d\n%s", code, out)
	}

	// Someone changes the target group in the console.
	drifted := liveSettings()
	drifted.HealthCheckInterval = 30 * time.Second
	drifted.DeregistrationDelay = 300 * time.Second
	if err := st.srv.Group.Modify(drifted); err != nil {
		t.Fatal(err)
	}
	out, code := runMythexEnv(t, env, "check", "--live", "-f", cfg)
	if code != 1 || !strings.Contains(out, "load_balancer.health_check.interval  file 5s") ||
		!strings.Contains(out, "load_balancer.deregistration_delay") || !strings.Contains(out, "(live numbers)") {
		t.Fatalf("check --live on a drifted target group: exit %d, want 1 listing both fields\n%s", code, out)
	}
	out, code = runMythexEnv(t, env, "check", "--live", "--json", "-f", cfg)
	if code != 1 || !strings.Contains(out, `"field": "load_balancer.health_check.interval"`) {
		t.Fatalf("check --live --json: exit %d\n%s", code, out)
	}

	out, code = runMythexEnv(t, env, "lb", "apply", "--dry-run", "-f", cfg)
	if code != 0 || !strings.Contains(out, "would change 2") {
		t.Fatalf("lb apply --dry-run: exit %d\n%s", code, out)
	}
	if st.srv.Group.Settings().HealthCheckInterval != 30*time.Second {
		t.Fatal("--dry-run changed the target group")
	}
	if out, code = runMythexEnv(t, env, "lb", "apply", "-f", cfg); code != 0 || !strings.Contains(out, "changed 2") {
		t.Fatalf("lb apply: exit %d\n%s", code, out)
	}
	if s := st.srv.Group.Settings(); s.HealthCheckInterval != 5*time.Second || s.DeregistrationDelay != 30*time.Second {
		t.Fatalf("after apply: %+v", s)
	}
	if out, code := runMythexEnv(t, env, "check", "--live", "-f", cfg); code != 0 {
		t.Fatalf("check --live after apply: exit %d\n%s", code, out)
	}
}

func TestCheckLive_RefusalsExit2AndChangeNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the mythex binary")
	}
	t.Parallel() // its own stand; every command a process of its own
	st := newALBStand(t, liveSettings(), 0)
	drifted := liveSettings()
	drifted.HealthCheckInterval = 30 * time.Second
	if err := st.srv.Group.Modify(drifted); err != nil {
		t.Fatal(err)
	}
	good := albConfig(t, st.endpoint, st.arn)
	unknownARN := strings.Replace(st.arn, "/mythex/", "/nope/", 1)
	failing := albConfig(t, st.endpoint, st.arn)
	b, _ := os.ReadFile(failing)
	_ = os.WriteFile(failing, bytes.Replace(b, []byte("serve_period: 15s"), []byte("serve_period: 5s"), 1), 0o600)

	tests := []struct {
		name    string
		env     []string
		args    []string
		mention string
	}{
		{"bad signature", albEnv(lb.KeyPair{AccessKeyID: standKey.AccessKeyID, SecretAccessKey: "wrong"}),
			[]string{"lb", "apply", "-f", good}, "secret access key"},
		{"unknown access key", albEnv(lb.KeyPair{AccessKeyID: "AKIAUNKNOWN", SecretAccessKey: "x"}),
			[]string{"check", "--live", "-f", good}, "access key is not valid"},
		{"unknown ARN", albEnv(standKey), []string{"lb", "apply", "-f", albConfig(t, st.endpoint, unknownARN)}, unknownARN},
		{"numbers that fail check", albEnv(standKey), []string{"lb", "apply", "-f", failing}, "fails mythex check (overlap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runMythexEnv(t, tc.env, tc.args...)
			if code != 2 || !strings.Contains(out, tc.mention) {
				t.Fatalf("exit %d, want 2 mentioning %q\n%s", code, tc.mention, out)
			}
			if st.srv.Group.Settings().HealthCheckInterval != 30*time.Second {
				t.Fatal("a refused call changed the target group")
			}
		})
	}
}

// TestAWSCLI_DrivesTheEmbeddedLB runs the real AWS CLI against the embedded
// LB's ELBv2 endpoint: describe, register, deregister.
func TestAWSCLI_DrivesTheEmbeddedLB(t *testing.T) {
	t.Parallel() // its own processes, ports and directories
	awsBin, err := exec.LookPath("aws")
	if err != nil {
		t.Skip("the AWS CLI is not installed (Debian: apt-get install -y awscli); skipping the AWS CLI test")
	}
	be := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(be.Close)
	s := liveSettings()
	s.HealthCheckInterval, s.HealthCheckTimeout, s.DeregistrationDelay = 100*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond
	st := newALBStand(t, s, 0)
	port := be.URL[strings.LastIndex(be.URL, ":")+1:]
	aws := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(awsBin, append([]string{"elbv2", "--region", "us-east-1", "--endpoint-url", st.endpoint, "--output", "text"}, args...)...)
		cmd.Env = albEnv(standKey)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("aws %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	target := "Id=127.0.0.1,Port=" + port
	aws("register-targets", "--target-group-arn", st.arn, "--targets", target)
	if _, err := st.srv.Group.Target("127.0.0.1:" + port); err != nil {
		t.Fatalf("registered through the AWS CLI, the LB lacks it: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for out := ""; !strings.Contains(out, "healthy"); out = aws("describe-target-health", "--target-group-arn", st.arn, "--targets", target) {
		if time.Now().After(deadline) {
			t.Fatalf("the AWS CLI never saw the target healthy; last:\n%s", out)
		}
	}
	aws("deregister-targets", "--target-group-arn", st.arn, "--targets", target)
	out := aws("describe-target-health", "--target-group-arn", st.arn, "--targets", target)
	if !strings.Contains(out, "draining") && !strings.Contains(out, "Target.NotRegistered") {
		t.Fatalf("after deregister-targets: %s", out)
	}
	if out := aws("describe-target-group-attributes", "--target-group-arn", st.arn); !strings.Contains(out, "deregistration_delay.timeout_seconds") {
		t.Fatalf("describe-target-group-attributes: %s", out)
	}
}

// embeddedConfig is a kind embedded mythex.yml whose admin API is at admin
// (host:port), with the numbers of liveSettings.
func embeddedConfig(t *testing.T, admin string) string {
	t.Helper()
	yml := fmt.Sprintf(`hosts:
  - {name: web-1, target: 127.0.0.1:9101}
  - {name: web-2, target: 127.0.0.1:9102}
load_balancer:
  kind: embedded
  listen: 127.0.0.1:9080
  admin_listen: %s
  health_check: {path: /healthz, interval: 5s, timeout: 2s, healthy_threshold: 2, unhealthy_threshold: 2}
  deregistration_delay: 30s
  idle_timeout: 60s
drain: {serve_period: 15s, shutdown_timeout: 10s}
backend: {keepalive_idle_timeout: 75s, stop_grace_period: 30s}
`, admin)
	p := filepath.Join(t.TempDir(), "mythex.yml")
	if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// check --live and lb apply on kind embedded: the same drift, the same apply,
// through the embedded LB's admin API; a wrong token is exit 2 and changes
// nothing.
func TestCheckLive_EmbeddedDriftAndApply(t *testing.T) {
	t.Parallel() // its own LB, processes and directories
	if testing.Short() {
		t.Skip("builds and runs the mythex binary")
	}
	st := newALBStand(t, liveSettings(), 0) // its admin listener is the embedded LB's admin API too
	cfg := embeddedConfig(t, strings.TrimPrefix(st.endpoint, "http://"))
	tokFile := filepath.Join(t.TempDir(), "lb.token")
	if err := os.WriteFile(tokFile, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(albEnv(standKey), "MYTHEX_LB_TOKEN=tok")

	if out, code := runMythexEnv(t, env, "check", "--live", "-f", cfg); code != 0 || !strings.Contains(out, "the embedded load balancer matches mythex.yml") {
		t.Fatalf("check --live on a matching embedded LB: exit %d\n%s", code, out)
	}
	drifted := liveSettings()
	drifted.HealthCheckInterval = 30 * time.Second
	drifted.Algorithm = lb.LeastOutstandingRequests
	if err := st.srv.Group.Modify(drifted); err != nil {
		t.Fatal(err)
	}
	out, code := runMythexEnv(t, env, "check", "--live", "--lb-token-file", tokFile, "-f", cfg)
	if code != 1 || !strings.Contains(out, "load_balancer.health_check.interval  file 5s") || !strings.Contains(out, "load_balancer.algorithm") {
		t.Fatalf("check --live on a drifted embedded LB: exit %d, want 1 listing interval and algorithm\n%s", code, out)
	}
	if out, code := runMythexEnv(t, albEnv(standKey), "lb", "apply", "--token-file", writeFile(t, "wrong"), "-f", cfg); code != 2 || !strings.Contains(out, "refused the credentials") {
		t.Fatalf("lb apply with a wrong token: exit %d, want 2\n%s", code, out)
	}
	if st.srv.Group.Settings() != drifted {
		t.Fatal("lb apply with a wrong token changed the LB")
	}
	if out, code = runMythexEnv(t, env, "lb", "apply", "-f", cfg); code != 0 || !strings.Contains(out, "changed 2") {
		t.Fatalf("lb apply: exit %d\n%s", code, out)
	}
	if s := st.srv.Group.Settings(); s != liveSettings() {
		t.Fatalf("after apply: %+v, want %+v", s, liveSettings())
	}
	if out, code := runMythexEnv(t, env, "check", "--live", "-f", cfg); code != 0 {
		t.Fatalf("check --live after apply: exit %d\n%s", code, out)
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

package alb

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/mythex/mythex/internal/lb"
	"github.com/mythex/mythex/internal/lbport"
)

var testKey = lb.KeyPair{AccessKeyID: "AKIAMYTHEXDRIVER0001", SecretAccessKey: "driver/test/secret"}

// stand is an embedded LB answering the ELBv2 API, with one backend that
// passes its health checks.
type stand struct {
	srv      *lb.Server
	endpoint string
	arn      string
	backend  string // host:port
}

func newStand(t *testing.T, throttle float64) *stand {
	t.Helper()
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	t.Cleanup(be.Close)
	s := lb.Settings{HealthCheckPath: "/healthz", HealthCheckInterval: 100 * time.Millisecond, HealthCheckTimeout: 50 * time.Millisecond,
		Thresholds: lb.Thresholds{Healthy: 2, Unhealthy: 2}, DeregistrationDelay: 5 * time.Second, IdleTimeout: time.Minute,
		ConnectTimeout: time.Second, MaxBodySize: lb.DefaultMaxBodySize}
	srv, err := lb.New(lb.Options{Settings: s, Token: "tok", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		ELBv2: &lb.ELBv2Options{Key: testKey, Throttle: throttle}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Group.Close)
	admin := httptest.NewServer(srv.Admin())
	t.Cleanup(admin.Close)
	return &stand{srv: srv, endpoint: admin.URL, arn: srv.TargetGroupARN, backend: strings.TrimPrefix(be.URL, "http://")}
}

func (s *stand) driver(t *testing.T, key lb.KeyPair, arn string) *Driver {
	t.Helper()
	d, err := New(context.Background(), Config{TargetGroupARN: arn, Endpoint: s.endpoint, MaxBackoff: 200 * time.Millisecond, MaxAttempts: 30,
		Credentials: credentials.NewStaticCredentialsProvider(key.AccessKeyID, key.SecretAccessKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (s *stand) ref() lbport.TargetRef {
	host, _, _ := strings.Cut(s.backend, ":")
	return lbport.TargetRef{ID: host, Address: s.backend}
}

func TestDriver_HandshakeAgainstTheEmbeddedLB(t *testing.T) {
	s := newStand(t, 0)
	d := s.driver(t, testKey, s.arn)
	ctx := context.Background()
	p := lbport.NewPoller(d, nil, 50*time.Millisecond)
	ref := s.ref()

	if err := d.Register(ctx, ref); err != nil {
		t.Fatal(err)
	}
	tg, err := p.Wait(ctx, ref, 10*time.Second, lbport.InService)
	if err != nil {
		t.Fatal(err)
	}
	if tg.InFlight != -1 || tg.ID != ref.ID {
		t.Fatalf("healthy target reads %+v", tg)
	}
	if err := d.Deregister(ctx, ref); err != nil {
		t.Fatal(err)
	}
	tg, err = p.Wait(ctx, ref, 10*time.Second, lbport.OutOfRotation)
	if err != nil || tg.State != lbport.StateUnused {
		t.Fatalf("after deregistration: %+v, %v", tg, err)
	}
	// Deregistering again, and an unknown target, is no error.
	if err := d.Deregister(ctx, lbport.TargetRef{ID: "127.0.0.9", Address: "127.0.0.9:80"}); err != nil {
		t.Fatal(err)
	}
}

func TestDriver_DescribeUnknownAndInvalidTargets(t *testing.T) {
	s := newStand(t, 0)
	d := s.driver(t, testKey, s.arn)
	ts, err := d.Describe(context.Background(),
		lbport.TargetRef{ID: "127.0.0.9", Address: "127.0.0.9:81"},
		lbport.TargetRef{ID: "i-0123456789abcdef0", Address: "10.0.0.1:80"})
	if err != nil {
		t.Fatal(err)
	}
	if ts[0].State != lbport.StateUnused || ts[0].Reason != lbport.ReasonNotRegistered {
		t.Fatalf("unknown target: %+v", ts[0])
	}
	if ts[1].State != lbport.StateUnused || ts[1].Reason != lbport.ReasonInvalidState {
		t.Fatalf("invalid target: %+v, want unused Target.InvalidState", ts[1])
	}
}

func TestDriver_ErrorsSayWhatToFix(t *testing.T) {
	s := newStand(t, 0)
	ctx := context.Background()
	otherARN := strings.Replace(s.arn, "/mythex/", "/other/", 1)
	tests := []struct {
		name     string
		d        *Driver
		call     func(d *Driver) error
		sentinel error
		mentions string
	}{
		{"unknown target group", s.driver(t, testKey, otherARN),
			func(d *Driver) error { _, err := d.Describe(ctx, s.ref()); return err }, lbport.ErrTargetGroupNotFound, otherARN},
		{"wrong secret", s.driver(t, lb.KeyPair{AccessKeyID: testKey.AccessKeyID, SecretAccessKey: "nope"}, s.arn),
			func(d *Driver) error { return d.Register(ctx, s.ref()) }, lbport.ErrUnauthorized, "secret access key"},
		{"unknown key", s.driver(t, lb.KeyPair{AccessKeyID: "AKIAOTHER", SecretAccessKey: "x"}, s.arn),
			func(d *Driver) error { return d.Deregister(ctx, s.ref()) }, lbport.ErrUnauthorized, "elasticloadbalancing:DeregisterTargets"},
		{"instance id on an ip target group", s.driver(t, testKey, s.arn),
			func(d *Driver) error { return d.Register(ctx, lbport.TargetRef{ID: "i-0abc", Address: "10.0.0.1:80"}) }, lbport.ErrInvalidTarget, "hosts[].target_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(tc.d)
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.mentions) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tc.sentinel, tc.mentions)
			}
			if lbport.IsTransient(err) {
				t.Fatalf("%v reads as transient", err)
			}
			if n := len(s.srv.Group.Targets()); n != 0 {
				t.Fatalf("%d targets registered after a refused call", n)
			}
		})
	}
}

func TestDriver_ThrottledCallsSlowDownButSucceed(t *testing.T) {
	s := newStand(t, 4) // 4 calls a second
	d := s.driver(t, testKey, s.arn)
	ctx := context.Background()
	start := time.Now()
	for range 12 {
		if _, err := d.Describe(ctx, s.ref()); err != nil {
			t.Fatalf("a throttled describe failed: %v", err)
		}
	}
	// 12 calls at 4/s with a bucket of 4: at least 2 s.
	if took := time.Since(start); took < 1500*time.Millisecond {
		t.Fatalf("12 calls at 4 calls/s took %v: not throttled", took)
	}
}

func TestDriver_SettingsAndApply(t *testing.T) {
	s := newStand(t, 0)
	d := s.driver(t, testKey, s.arn)
	ctx := context.Background()
	want := lbport.Settings{
		HealthCheck:         lbport.HealthCheck{Path: "/up", Interval: 10 * time.Second, Timeout: 3 * time.Second, HealthyThreshold: 2, UnhealthyThreshold: 3},
		DeregistrationDelay: 40 * time.Second, Algorithm: "least_outstanding_requests",
	}
	if err := d.Apply(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := d.Settings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("settings read back %+v, want %+v", got, want)
	}
	bad := want
	bad.HealthCheck.Interval = 1500 * time.Millisecond
	if err := d.Apply(ctx, bad); !errors.Is(err, ErrConfig) {
		t.Fatalf("a fractional interval: %v, want ErrConfig", err)
	}
	bad = want
	bad.HealthCheck.Interval = 2 * time.Second // below the ALB's 5 s
	if err := d.Apply(ctx, bad); err == nil || lbport.IsTransient(err) || !strings.Contains(err.Error(), "ValidationError") {
		t.Fatalf("an out-of-range interval: %v, want a permanent ValidationError", err)
	}
}

func TestNew_Config(t *testing.T) {
	ctx := context.Background()
	arn := lb.DefaultTargetGroupARN
	if _, err := New(ctx, Config{TargetGroupARN: "arn:aws:s3:::bucket"}); !errors.Is(err, ErrConfig) {
		t.Fatalf("an S3 ARN: %v", err)
	}
	if _, err := New(ctx, Config{TargetGroupARN: arn, Region: "eu-west-1"}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "us-east-1") {
		t.Fatalf("region against the ARN's: %v", err)
	}
}

func TestNew_EndpointFromTheEnvironment(t *testing.T) {
	s := newStand(t, 0)
	t.Setenv("AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2", s.endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", testKey.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testKey.SecretAccessKey)
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	d, err := New(context.Background(), Config{TargetGroupARN: s.arn})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Describe(context.Background(), s.ref()); err != nil {
		t.Fatalf("describe through the endpoint from the environment and the default credentials chain: %v", err)
	}
}

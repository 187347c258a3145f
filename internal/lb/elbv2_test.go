package lb

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/smithy-go"
	"github.com/jonboulle/clockwork"
)

var testKey = KeyPair{AccessKeyID: "AKIAMYTHEXTEST000001", SecretAccessKey: "mythex/test/secret/key/0000000000000000"}

// elbv2Harness is a target group behind the ELBv2 endpoint on an httptest
// server.
type elbv2Harness struct {
	*harness
	url string
	arn string
}

func newELBv2Harness(t *testing.T, o ELBv2Options) *elbv2Harness {
	t.Helper()
	h := &elbv2Harness{harness: newHarness(t, testSettings())}
	if o.Key == (KeyPair{}) {
		o.Key = testKey
	}
	api := newELBv2(h.g, o, clockwork.NewRealClock(), discardLogger(), nil)
	h.arn = api.o.TargetGroupARN
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	h.url = ts.URL
	return h
}

// client returns an SDK client for the endpoint signing with key, in region,
// with no retries.
func (h *elbv2Harness) client(key KeyPair, region string) *elb.Client {
	return elb.New(elb.Options{
		Region:           region,
		BaseEndpoint:     aws.String(h.url),
		Credentials:      credentials.NewStaticCredentialsProvider(key.AccessKeyID, key.SecretAccessKey, ""),
		RetryMaxAttempts: 1,
	})
}

func awsCode(t *testing.T, err error) string {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("want an AWS API error, got %v", err)
	}
	return ae.ErrorCode()
}

func target(id string, port int32) types.TargetDescription {
	return types.TargetDescription{Id: aws.String(id), Port: aws.Int32(port)}
}

func TestELBv2_RegisterDescribeDeregisterThroughTheSDK(t *testing.T) {
	h := newELBv2Harness(t, ELBv2Options{})
	c := h.client(testKey, DefaultELBv2Region)
	ctx := context.Background()
	h.hc.set("127.0.0.1:9101", modePass)

	if _, err := c.RegisterTargets(ctx, &elb.RegisterTargetsInput{TargetGroupArn: &h.arn,
		Targets: []types.TargetDescription{target("127.0.0.1", 9101)}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "target healthy", func() bool {
		out, err := c.DescribeTargetHealth(ctx, &elb.DescribeTargetHealthInput{TargetGroupArn: &h.arn,
			Targets: []types.TargetDescription{target("127.0.0.1", 9101)}})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.TargetHealthDescriptions) == 1 && out.TargetHealthDescriptions[0].TargetHealth.State == types.TargetHealthStateEnumHealthy
	})

	// Every target, no Targets given; and an unknown one given explicitly.
	out, err := c.DescribeTargetHealth(ctx, &elb.DescribeTargetHealthInput{TargetGroupArn: &h.arn})
	if err != nil || len(out.TargetHealthDescriptions) != 1 {
		t.Fatalf("describe all = %+v, %v", out, err)
	}
	d := out.TargetHealthDescriptions[0]
	if aws.ToString(d.Target.Id) != "127.0.0.1" || aws.ToInt32(d.Target.Port) != 9101 || aws.ToString(d.HealthCheckPort) != "9101" {
		t.Fatalf("target described as %s:%d (check port %s)", aws.ToString(d.Target.Id), aws.ToInt32(d.Target.Port), aws.ToString(d.HealthCheckPort))
	}
	out, err = c.DescribeTargetHealth(ctx, &elb.DescribeTargetHealthInput{TargetGroupArn: &h.arn,
		Targets: []types.TargetDescription{target("127.0.0.1", 9199)}})
	if err != nil {
		t.Fatal(err)
	}
	if th := out.TargetHealthDescriptions[0].TargetHealth; th.State != types.TargetHealthStateEnumUnused || th.Reason != types.TargetHealthReasonEnumNotRegistered {
		t.Fatalf("unknown target = %s %s, want unused Target.NotRegistered", th.State, th.Reason)
	}

	// Deregistering an unknown target is no error; the known one drains
	// (nothing in flight: at once) to unused.
	if _, err := c.DeregisterTargets(ctx, &elb.DeregisterTargetsInput{TargetGroupArn: &h.arn,
		Targets: []types.TargetDescription{target("127.0.0.1", 9101), target("127.0.0.1", 9199)}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "target unused", func() bool {
		out, err := c.DescribeTargetHealth(ctx, &elb.DescribeTargetHealthInput{TargetGroupArn: &h.arn,
			Targets: []types.TargetDescription{target("127.0.0.1", 9101)}})
		if err != nil {
			t.Fatal(err)
		}
		return out.TargetHealthDescriptions[0].TargetHealth.State == types.TargetHealthStateEnumUnused
	})
}

func TestELBv2_KeepsTheAdminNameOfAKnownAddress(t *testing.T) {
	h := newELBv2Harness(t, ELBv2Options{})
	h.register("web-1", addrA, modePass)
	if _, err := h.g.Deregister("web-1"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "web-1 gone", func() bool { _, err := h.g.Target("web-1"); return errors.Is(err, ErrTargetNotFound) })
	host, port := splitAddr(t, addrA)
	c := h.client(testKey, DefaultELBv2Region)
	if _, err := c.RegisterTargets(context.Background(), &elb.RegisterTargetsInput{TargetGroupArn: &h.arn,
		Targets: []types.TargetDescription{target(host, port)}}); err != nil {
		t.Fatal(err)
	}
	if st, err := h.g.Target("web-1"); err != nil || st.Address != addrA {
		t.Fatalf("re-registered through ELBv2 as %+v, %v; want the id web-1 back", st, err)
	}
}

func TestELBv2_ErrorsAndNothingChanged(t *testing.T) {
	h := newELBv2Harness(t, ELBv2Options{})
	ctx := context.Background()
	good := h.client(testKey, DefaultELBv2Region)
	register := func(c *elb.Client, arn string, ts ...types.TargetDescription) error {
		_, err := c.RegisterTargets(ctx, &elb.RegisterTargetsInput{TargetGroupArn: aws.String(arn), Targets: ts})
		return err
	}
	tests := []struct {
		name string
		call func() error
		code string
	}{
		{"wrong secret", func() error {
			return register(h.client(KeyPair{testKey.AccessKeyID, "wrong"}, DefaultELBv2Region), h.arn, target("127.0.0.1", 9101))
		}, "SignatureDoesNotMatch"},
		{"unknown access key", func() error {
			return register(h.client(KeyPair{"AKIAOTHER", testKey.SecretAccessKey}, DefaultELBv2Region), h.arn, target("127.0.0.1", 9101))
		}, "InvalidClientTokenId"},
		{"wrong region", func() error {
			return register(h.client(testKey, "eu-west-1"), h.arn, target("127.0.0.1", 9101))
		}, "SignatureDoesNotMatch"},
		{"unknown target group", func() error {
			return register(good, strings.Replace(h.arn, "mythex", "other", 1), target("127.0.0.1", 9101))
		}, "TargetGroupNotFound"},
		{"instance id on an ip target group", func() error {
			return register(good, h.arn, target("i-0abc", 80))
		}, "InvalidTarget"},
		{"one bad target among good ones", func() error {
			return register(good, h.arn, target("127.0.0.1", 9101), target("nope", 80))
		}, "InvalidTarget"},
		{"health check interval out of the ALB range", func() error {
			_, err := good.ModifyTargetGroup(ctx, &elb.ModifyTargetGroupInput{TargetGroupArn: &h.arn,
				HealthCheckIntervalSeconds: aws.Int32(2), HealthyThresholdCount: aws.Int32(4)})
			return err
		}, "ValidationError"},
		{"timeout not below interval", func() error {
			_, err := good.ModifyTargetGroup(ctx, &elb.ModifyTargetGroupInput{TargetGroupArn: &h.arn,
				HealthCheckIntervalSeconds: aws.Int32(10), HealthCheckTimeoutSeconds: aws.Int32(10)})
			return err
		}, "ValidationError"},
		{"unknown attribute among good ones", func() error {
			_, err := good.ModifyTargetGroupAttributes(ctx, &elb.ModifyTargetGroupAttributesInput{TargetGroupArn: &h.arn,
				Attributes: []types.TargetGroupAttribute{
					{Key: aws.String(attrDeregistrationDelay), Value: aws.String("7")},
					{Key: aws.String("no.such.key"), Value: aws.String("1")}}})
			return err
		}, "ValidationError"},
		{"slow start the embedded LB lacks", func() error {
			_, err := good.ModifyTargetGroupAttributes(ctx, &elb.ModifyTargetGroupAttributesInput{TargetGroupArn: &h.arn,
				Attributes: []types.TargetGroupAttribute{{Key: aws.String(attrSlowStart), Value: aws.String("30")}}})
			return err
		}, "InvalidConfigurationRequest"},
	}
	before := h.g.Settings()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if got := awsCode(t, err); got != tc.code {
				t.Fatalf("error code %s (%v), want %s", got, err, tc.code)
			}
			if n := len(h.g.Targets()); n != 0 {
				t.Fatalf("%d targets registered after a refused call", n)
			}
			if h.g.Settings() != before {
				t.Fatalf("settings changed by a refused call: %+v", h.g.Settings())
			}
		})
	}
}

func TestELBv2_RawErrorShapeAndMissingSignature(t *testing.T) {
	h := newELBv2Harness(t, ELBv2Options{})
	resp, err := http.Post(h.url+"/", "application/x-www-form-urlencoded",
		strings.NewReader("Action=RegisterTargets&Version=2015-12-01&TargetGroupArn="+h.arn+"&Targets.member.1.Id=127.0.0.1&Targets.member.1.Port=9101"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("unsigned call = %d, want 403", resp.StatusCode)
	}
	for _, want := range []string{`<ErrorResponse xmlns="http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/">`,
		"<Type>Sender</Type>", "<Code>MissingAuthenticationToken</Code>", "<RequestId>"} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("answer %s lacks %s", b, want)
		}
	}
	if len(h.g.Targets()) != 0 {
		t.Fatal("an unsigned call registered a target")
	}
}

func TestELBv2_Throttles(t *testing.T) {
	h := newELBv2Harness(t, ELBv2Options{Throttle: 1})
	c := h.client(testKey, DefaultELBv2Region)
	var throttled int
	for range 5 {
		_, err := c.DescribeTargetGroups(context.Background(), &elb.DescribeTargetGroupsInput{})
		if err != nil {
			if code := awsCode(t, err); code != "ThrottlingException" {
				t.Fatalf("error %v, want ThrottlingException", err)
			}
			throttled++
		}
	}
	// A bucket of 1 refilling at 1/s: 5 back-to-back calls cannot all pass.
	if throttled == 0 {
		t.Fatal("5 calls in a row at 1 call/s: none throttled")
	}
}

func TestELBv2_ModifyAndDescribeSettings(t *testing.T) {
	h := newELBv2Harness(t, ELBv2Options{Region: "eu-west-1"})
	if !strings.Contains(h.arn, ":eu-west-1:") {
		t.Fatalf("default ARN %s not in the endpoint's region", h.arn)
	}
	c := h.client(testKey, "eu-west-1")
	ctx := context.Background()
	mod, err := c.ModifyTargetGroup(ctx, &elb.ModifyTargetGroupInput{TargetGroupArn: &h.arn,
		HealthCheckPath: aws.String("/ready"), HealthCheckIntervalSeconds: aws.Int32(10), HealthCheckTimeoutSeconds: aws.Int32(4),
		HealthyThresholdCount: aws.Int32(2), UnhealthyThresholdCount: aws.Int32(3)})
	if err != nil {
		t.Fatal(err)
	}
	if len(mod.TargetGroups) != 1 || aws.ToInt32(mod.TargetGroups[0].HealthCheckIntervalSeconds) != 10 {
		t.Fatalf("ModifyTargetGroup answered %+v", mod.TargetGroups)
	}
	if _, err := c.ModifyTargetGroupAttributes(ctx, &elb.ModifyTargetGroupAttributesInput{TargetGroupArn: &h.arn,
		Attributes: []types.TargetGroupAttribute{
			{Key: aws.String(attrDeregistrationDelay), Value: aws.String("45")},
			{Key: aws.String(attrAlgorithm), Value: aws.String("least_outstanding_requests")}}}); err != nil {
		t.Fatal(err)
	}
	s := h.g.Settings()
	if s.HealthCheckPath != "/ready" || s.HealthCheckInterval != 10*time.Second || s.HealthCheckTimeout != 4*time.Second ||
		s.Thresholds != (Thresholds{Healthy: 2, Unhealthy: 3}) || s.DeregistrationDelay != 45*time.Second || s.Algorithm != LeastOutstandingRequests {
		t.Fatalf("settings after modify: %+v", s)
	}
	tgs, err := c.DescribeTargetGroups(ctx, &elb.DescribeTargetGroupsInput{TargetGroupArns: []string{h.arn}})
	if err != nil {
		t.Fatal(err)
	}
	tg := tgs.TargetGroups[0]
	if aws.ToString(tg.HealthCheckPath) != "/ready" || aws.ToInt32(tg.HealthyThresholdCount) != 2 || tg.TargetType != types.TargetTypeEnumIp {
		t.Fatalf("DescribeTargetGroups = %+v", tg)
	}
	attrs, err := c.DescribeTargetGroupAttributes(ctx, &elb.DescribeTargetGroupAttributesInput{TargetGroupArn: &h.arn})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range attrs.Attributes {
		got[aws.ToString(a.Key)] = aws.ToString(a.Value)
	}
	if got[attrDeregistrationDelay] != "45" || got[attrAlgorithm] != "least_outstanding_requests" || got[attrSlowStart] != "0" {
		t.Fatalf("attributes = %v", got)
	}
}

func TestVerifySigV4_SkewedClock(t *testing.T) {
	h := newHarness(t, testSettings())
	clock := clockwork.NewFakeClockAt(time.Now().Add(10 * time.Minute))
	api := newELBv2(h.g, ELBv2Options{Key: testKey}, clock, discardLogger(), nil)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	c := elb.New(elb.Options{Region: DefaultELBv2Region, BaseEndpoint: aws.String(ts.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider(testKey.AccessKeyID, testKey.SecretAccessKey, "")})
	_, err := c.DescribeTargetGroups(context.Background(), &elb.DescribeTargetGroupsInput{})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "SignatureDoesNotMatch" || !strings.Contains(ae.ErrorMessage(), "Signature expired") {
		t.Fatalf("request 10 minutes behind the server's clock: %v, want SignatureDoesNotMatch Signature expired", err)
	}
}

func splitAddr(t *testing.T, addr string) (string, int32) {
	t.Helper()
	host, port, ok := strings.Cut(addr, ":")
	if !ok {
		t.Fatalf("address %q", addr)
	}
	var n int32
	for _, c := range port {
		n = n*10 + int32(c-'0')
	}
	return host, n
}

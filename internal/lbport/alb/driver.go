// Package alb is the lbport.Driver of an AWS Application Load Balancer's
// target group, through aws-sdk-go-v2's ELBv2 client (API 2015-12-01). It
// also drives the embedded load balancer's ELBv2 endpoint, which answers the
// same API, so everything here is testable without AWS.
//
// The driver never waits: it makes one API call per method (Describe asks for
// every target given in one DescribeTargetHealth). Polling, the propagation
// grace and retries across calls belong to the caller (lbport.Poller). The
// SDK's own retryer still retries ThrottlingException and network errors
// with backoff inside one call.
package alb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/smithy-go"

	"github.com/mythex/mythex/internal/lbport"
)

// Config says which target group to drive and how to reach the API.
type Config struct {
	// TargetGroupARN is the target group's ARN. Required.
	TargetGroupARN string
	// Region is the target group's region. Default: the ARN's region; when
	// both are given they must agree.
	Region string
	// Endpoint is the ELBv2 API's URL. Default: the SDK's (the region's
	// public endpoint, or $AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2).
	Endpoint string
	// Credentials, when not nil, replace the SDK's default chain (env, shared
	// config, instance role). mythex.yml never holds credentials; tests and
	// the demo pass them here.
	Credentials aws.CredentialsProvider
	// CallTimeout bounds one API call, retries included. Default 30s.
	CallTimeout time.Duration
	// MaxAttempts is how many times the SDK tries one call that was
	// throttled or hit a network error. Default 10.
	MaxAttempts int
	// MaxBackoff bounds the SDK's backoff between two attempts. Default 2s
	// (the Describe* bucket refills 10 tokens a second).
	MaxBackoff time.Duration
}

// Driver drives one ALB target group. Safe for concurrent use.
type Driver struct {
	c      *elb.Client
	arn    string
	region string
	calls  atomic.Int64
	tmo    time.Duration
}

var _ lbport.Driver = (*Driver)(nil)

// ErrConfig is returned (wrapped) by New for a Config it cannot use.
var ErrConfig = errors.New("alb driver config")

// New returns a driver for cfg, loading the SDK's default config (region,
// credentials chain, endpoint overrides from the environment). It makes no
// API call. Errors match ErrConfig.
func New(ctx context.Context, cfg Config) (*Driver, error) {
	arnRegion, err := ARNRegion(cfg.TargetGroupARN)
	if err != nil {
		return nil, err
	}
	region := cfg.Region
	if region == "" {
		region = arnRegion
	}
	if region != arnRegion {
		return nil, fmt.Errorf("%w: load_balancer.region is %s but the target group ARN is in %s; an ARN is only found in its own region",
			ErrConfig, region, arnRegion)
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 10
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 2 * time.Second
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(region),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(cfg.CallTimeout)),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxAttempts
				o.MaxBackoff = cfg.MaxBackoff
				// No client-side retry quota: a throttled account must slow
				// the deploy down, never fail it with "retry quota exceeded".
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: load the AWS SDK config: %w", ErrConfig, err)
	}
	c := elb.NewFromConfig(awsCfg, func(o *elb.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	})
	return &Driver{c: c, arn: cfg.TargetGroupARN, region: region, tmo: cfg.CallTimeout}, nil
}

// ARNRegion returns the region of a target group ARN
// (arn:PARTITION:elasticloadbalancing:REGION:ACCOUNT:targetgroup/NAME/ID);
// an error matching ErrConfig when arn is not one.
func ARNRegion(arn string) (string, error) {
	f := strings.SplitN(arn, ":", 6)
	if len(f) != 6 || f[0] != "arn" || f[2] != "elasticloadbalancing" || f[3] == "" || !strings.HasPrefix(f[5], "targetgroup/") {
		return "", fmt.Errorf("%w: load_balancer.target_group_arn %q is not a target group ARN (arn:aws:elasticloadbalancing:REGION:ACCOUNT:targetgroup/NAME/ID)", ErrConfig, arn)
	}
	return f[3], nil
}

// Kind is "alb".
func (d *Driver) Kind() string { return "alb" }

// Calls is how many API calls the driver has made (each SDK retry of a call
// not counted again).
func (d *Driver) Calls() int64 { return d.calls.Load() }

// Register registers the target (RegisterTargets): state initial.
func (d *Driver) Register(ctx context.Context, t lbport.TargetRef) error {
	td, err := description(t)
	if err != nil {
		return err
	}
	d.calls.Add(1)
	_, err = d.c.RegisterTargets(ctx, &elb.RegisterTargetsInput{TargetGroupArn: &d.arn, Targets: []types.TargetDescription{td}})
	return d.mapErr("RegisterTargets", t, err)
}

// Deregister deregisters the target (DeregisterTargets): state draining,
// then unused. An unknown target is not an error, as in ELBv2.
func (d *Driver) Deregister(ctx context.Context, t lbport.TargetRef) error {
	td, err := description(t)
	if err != nil {
		return err
	}
	d.calls.Add(1)
	_, err = d.c.DeregisterTargets(ctx, &elb.DeregisterTargetsInput{TargetGroupArn: &d.arn, Targets: []types.TargetDescription{td}})
	return d.mapErr("DeregisterTargets", t, err)
}

// Describe reports the targets in one DescribeTargetHealth call with
// explicit Targets. A target the API calls InvalidTarget (an instance
// stopped or terminated, an IP outside the VPC) is reported unused,
// Target.InvalidState: it cannot be in rotation. InRotation is true for
// healthy targets only (the API does not say when an ALB fails open);
// InFlight is -1 (the API does not report it).
func (d *Driver) Describe(ctx context.Context, ts ...lbport.TargetRef) ([]lbport.Target, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	tds := make([]types.TargetDescription, len(ts))
	for i, t := range ts {
		td, err := description(t)
		if err != nil {
			return nil, err
		}
		tds[i] = td
	}
	d.calls.Add(1)
	out, err := d.c.DescribeTargetHealth(ctx, &elb.DescribeTargetHealthInput{TargetGroupArn: &d.arn, Targets: tds})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "InvalidTarget" {
			return d.describeEach(ctx, ts, ae.ErrorMessage())
		}
		return nil, d.mapErr("DescribeTargetHealth", lbport.TargetRef{}, err)
	}
	return d.convertAll(ts, out.TargetHealthDescriptions)
}

// describeEach asks for each target alone after the API refused one of
// them as a whole call.
func (d *Driver) describeEach(ctx context.Context, ts []lbport.TargetRef, msg string) ([]lbport.Target, error) {
	if len(ts) == 1 {
		return []lbport.Target{{ID: ts[0].ID, Address: ts[0].Address, State: lbport.StateUnused,
			Reason: lbport.ReasonInvalidState, Description: "InvalidTarget: " + msg, InFlight: -1}}, nil
	}
	out := make([]lbport.Target, 0, len(ts))
	for _, t := range ts {
		one, err := d.Describe(ctx, t)
		if err != nil {
			return nil, err
		}
		out = append(out, one...)
	}
	return out, nil
}

func (d *Driver) convertAll(ts []lbport.TargetRef, descs []types.TargetHealthDescription) ([]lbport.Target, error) {
	out := make([]lbport.Target, 0, len(ts))
	for _, t := range ts {
		td, _ := description(t)
		var found *types.TargetHealthDescription
		for i := range descs {
			if descs[i].Target != nil && aws.ToString(descs[i].Target.Id) == aws.ToString(td.Id) &&
				(td.Port == nil || aws.ToInt32(descs[i].Target.Port) == aws.ToInt32(td.Port)) {
				found = &descs[i]
				break
			}
		}
		if found == nil || found.TargetHealth == nil {
			out = append(out, lbport.Target{ID: t.ID, Address: t.Address, State: lbport.StateUnused,
				Reason: lbport.ReasonNotRegistered, InFlight: -1})
			continue
		}
		st, err := state(found.TargetHealth.State)
		if err != nil {
			return nil, &lbport.UnexpectedError{Op: "DescribeTargetHealth " + t.ID, Detail: err.Error()}
		}
		out = append(out, lbport.Target{
			ID: t.ID, Address: t.Address, State: st, Reason: lbport.Reason(found.TargetHealth.Reason),
			Description: aws.ToString(found.TargetHealth.Description),
			InRotation:  st == lbport.StateHealthy, InFlight: -1,
		})
	}
	return out, nil
}

// state maps an ELBv2 state; unhealthy.draining (an unhealthy target being
// drained) is draining.
func state(s types.TargetHealthStateEnum) (lbport.State, error) {
	if s == types.TargetHealthStateEnumUnhealthyDraining {
		return lbport.StateDraining, nil
	}
	return lbport.ParseState(string(s))
}

// Settings reads the target group's health check (DescribeTargetGroups) and
// attributes (DescribeTargetGroupAttributes).
func (d *Driver) Settings(ctx context.Context) (lbport.Settings, error) {
	d.calls.Add(1)
	tgs, err := d.c.DescribeTargetGroups(ctx, &elb.DescribeTargetGroupsInput{TargetGroupArns: []string{d.arn}})
	if err != nil {
		return lbport.Settings{}, d.mapErr("DescribeTargetGroups", lbport.TargetRef{}, err)
	}
	if len(tgs.TargetGroups) != 1 {
		return lbport.Settings{}, &lbport.UnexpectedError{Op: "DescribeTargetGroups", Detail: fmt.Sprintf("%d target groups for one ARN", len(tgs.TargetGroups))}
	}
	tg := tgs.TargetGroups[0]
	s := lbport.Settings{HealthCheck: lbport.HealthCheck{
		Path:               aws.ToString(tg.HealthCheckPath),
		Interval:           seconds(tg.HealthCheckIntervalSeconds),
		Timeout:            seconds(tg.HealthCheckTimeoutSeconds),
		HealthyThreshold:   int(aws.ToInt32(tg.HealthyThresholdCount)),
		UnhealthyThreshold: int(aws.ToInt32(tg.UnhealthyThresholdCount)),
	}}
	d.calls.Add(1)
	attrs, err := d.c.DescribeTargetGroupAttributes(ctx, &elb.DescribeTargetGroupAttributesInput{TargetGroupArn: &d.arn})
	if err != nil {
		return lbport.Settings{}, d.mapErr("DescribeTargetGroupAttributes", lbport.TargetRef{}, err)
	}
	for _, a := range attrs.Attributes {
		v := aws.ToString(a.Value)
		switch aws.ToString(a.Key) {
		case AttrDeregistrationDelay:
			s.DeregistrationDelay, err = secondsAttr(AttrDeregistrationDelay, v)
		case AttrSlowStart:
			s.SlowStart, err = secondsAttr(AttrSlowStart, v)
		case AttrAlgorithm:
			s.Algorithm = v
		}
		if err != nil {
			return lbport.Settings{}, err
		}
	}
	return s, nil
}

// Target group attribute keys the driver reads and writes.
const (
	// AttrDeregistrationDelay is deregistration_delay.timeout_seconds.
	AttrDeregistrationDelay = "deregistration_delay.timeout_seconds"
	// AttrAlgorithm is load_balancing.algorithm.type.
	AttrAlgorithm = "load_balancing.algorithm.type"
	// AttrSlowStart is slow_start.duration_seconds.
	AttrSlowStart = "slow_start.duration_seconds"
)

// Apply sets the health check (ModifyTargetGroup) and then the attributes
// (ModifyTargetGroupAttributes). Durations are whole seconds on the API:
// a fraction is refused, not rounded. If the second call fails the first has
// applied: the error says so.
func (d *Driver) Apply(ctx context.Context, s lbport.Settings) error {
	hc := s.HealthCheck
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"health_check.interval", hc.Interval}, {"health_check.timeout", hc.Timeout},
		{"deregistration_delay", s.DeregistrationDelay}, {"slow start", s.SlowStart}} {
		if f.v%time.Second != 0 {
			return fmt.Errorf("%w: %s %v is not a whole number of seconds; the ELBv2 API takes seconds", ErrConfig, f.name, f.v)
		}
	}
	d.calls.Add(1)
	_, err := d.c.ModifyTargetGroup(ctx, &elb.ModifyTargetGroupInput{
		TargetGroupArn:             &d.arn,
		HealthCheckPath:            aws.String(hc.Path),
		HealthCheckIntervalSeconds: aws.Int32(int32(hc.Interval / time.Second)),
		HealthCheckTimeoutSeconds:  aws.Int32(int32(hc.Timeout / time.Second)),
		HealthyThresholdCount:      aws.Int32(int32(hc.HealthyThreshold)),
		UnhealthyThresholdCount:    aws.Int32(int32(hc.UnhealthyThreshold)),
	})
	if err != nil {
		return d.mapErr("ModifyTargetGroup", lbport.TargetRef{}, err)
	}
	attrs := []types.TargetGroupAttribute{
		{Key: aws.String(AttrDeregistrationDelay), Value: aws.String(strconv.Itoa(int(s.DeregistrationDelay / time.Second)))},
		{Key: aws.String(AttrSlowStart), Value: aws.String(strconv.Itoa(int(s.SlowStart / time.Second)))},
	}
	if s.Algorithm != "" {
		attrs = append(attrs, types.TargetGroupAttribute{Key: aws.String(AttrAlgorithm), Value: aws.String(s.Algorithm)})
	}
	d.calls.Add(1)
	_, err = d.c.ModifyTargetGroupAttributes(ctx, &elb.ModifyTargetGroupAttributesInput{TargetGroupArn: &d.arn, Attributes: attrs})
	if err != nil {
		return fmt.Errorf("health check applied, attributes not: %w", d.mapErr("ModifyTargetGroupAttributes", lbport.TargetRef{}, err))
	}
	return nil
}

func seconds(n *int32) time.Duration { return time.Duration(aws.ToInt32(n)) * time.Second }

func secondsAttr(key, v string) (time.Duration, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, &lbport.UnexpectedError{Op: "DescribeTargetGroupAttributes", Detail: fmt.Sprintf("%s is %q, not whole seconds", key, v)}
	}
	return time.Duration(n) * time.Second, nil
}

// description is the ELBv2 target of t: Id t.ID, Port from t.Address.
func description(t lbport.TargetRef) (types.TargetDescription, error) {
	if t.ID == "" {
		return types.TargetDescription{}, fmt.Errorf("%w: empty target id", lbport.ErrInvalidTarget)
	}
	td := types.TargetDescription{Id: aws.String(t.ID)}
	if t.Address == "" {
		return td, nil
	}
	_, port, err := net.SplitHostPort(t.Address)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil || n < 1 || n > 65535 {
		return td, fmt.Errorf("%w: target %s: address %q has no port from 1 to 65535", lbport.ErrInvalidTarget, t.ID, t.Address)
	}
	td.Port = aws.Int32(int32(n))
	return td, nil
}

// throttled says whether err is a throttling error the SDK gave up
// retrying.
func throttled(code string) bool {
	switch code {
	case "ThrottlingException", "Throttling", "RequestLimitExceeded", "TooManyRequestsException":
		return true
	}
	return false
}

// mapErr turns an SDK error into one that says what to fix and matches the
// lbport sentinels.
func (d *Driver) mapErr(action string, t lbport.TargetRef, err error) error {
	if err == nil {
		return nil
	}
	op := "elasticloadbalancing:" + action
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		var re *awshttp.ResponseError
		if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusForbidden {
			return fmt.Errorf("%s on %s: %w: %w", op, d.arn, lbport.ErrUnauthorized, err)
		}
		if strings.Contains(err.Error(), "failed to retrieve credentials") || strings.Contains(err.Error(), "no EC2 IMDS role found") {
			return fmt.Errorf("%s: %w: no AWS credentials: the SDK's default chain found none (set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run with an instance role; mythex.yml never holds them): %w",
				op, lbport.ErrUnauthorized, err)
		}
		return fmt.Errorf("%s in %s: %w", op, d.region, err)
	}
	code := ae.ErrorCode()
	switch {
	case code == "AccessDenied" || code == "AccessDeniedException" || code == "UnauthorizedOperation":
		return fmt.Errorf("%w: the credentials may not call %s on %s: add that action to their IAM policy (see docs/alb.md): %s",
			lbport.ErrUnauthorized, op, d.arn, ae.ErrorMessage())
	case code == "InvalidClientTokenId" || code == "UnrecognizedClientException" || code == "MissingAuthenticationToken":
		return fmt.Errorf("%w: %s: the access key is not valid for the ELBv2 API in %s (%s): check the credentials the SDK's default chain picks (AWS_PROFILE, AWS_ACCESS_KEY_ID)",
			lbport.ErrUnauthorized, op, d.region, ae.ErrorMessage())
	case code == "SignatureDoesNotMatch" || code == "IncompleteSignature":
		return fmt.Errorf("%w: %s: the request was refused as signed (%s): check the secret access key, load_balancer.region (%s) and the clock",
			lbport.ErrUnauthorized, op, ae.ErrorMessage(), d.region)
	case code == "TargetGroupNotFound":
		return fmt.Errorf("%w: %s: no target group %s in %s: check load_balancer.target_group_arn and load_balancer.region",
			lbport.ErrTargetGroupNotFound, op, d.arn, d.region)
	case code == "InvalidTarget":
		return fmt.Errorf("%w: %s: target %s (%s) refused: %s: check hosts[].target_id (the instance id for target_type instance, the IP for ip) and the port in hosts[].target",
			lbport.ErrInvalidTarget, op, t.ID, t.Address, ae.ErrorMessage())
	case throttled(code):
		return fmt.Errorf("%w: %s: still throttled after the SDK's retries: %s", lbport.ErrThrottled, op, ae.ErrorMessage())
	case code == "ValidationError" || code == "InvalidConfigurationRequest":
		return permanent{fmt.Errorf("%s on %s refused (%s): %s", op, d.arn, code, ae.ErrorMessage())}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 400 && re.HTTPStatusCode() < 500 {
		return permanent{fmt.Errorf("%s on %s in %s: %w", op, d.arn, d.region, err)}
	}
	return fmt.Errorf("%s on %s in %s: %w", op, d.arn, d.region, err)
}

// permanent is an API answer a retry will not change (a 4xx that is not
// throttling).
type permanent struct{ error }

// Transient is false: lbport.IsTransient reads it.
func (permanent) Transient() bool { return false }

// Unwrap returns the answer.
func (p permanent) Unwrap() error { return p.error }

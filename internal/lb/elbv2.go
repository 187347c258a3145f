package lb

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/time/rate"
)

// ELBv2 API constants.
const (
	// ELBv2Version is the API version the endpoint speaks.
	ELBv2Version = "2015-12-01"
	// ELBv2Service is the SigV4 service name of the ELBv2 API.
	ELBv2Service = "elasticloadbalancing"
	// DefaultELBv2Region is the region the endpoint answers for by default.
	DefaultELBv2Region = "us-east-1"
	// DefaultTargetGroupARN is the ARN the endpoint gives its target group
	// by default (account 123456789012, name mythex).
	DefaultTargetGroupARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/mythex/6d79746865786c62"
)

// ELBv2Options configure the embedded LB's ELBv2 API endpoint (docs/lb.md).
type ELBv2Options struct {
	// Key is the key pair requests must be signed with. Required.
	Key KeyPair
	// Region is the region requests must be signed for. Default the region
	// of TargetGroupARN, else us-east-1.
	Region string
	// TargetGroupARN is the ARN of the one target group. Default
	// DefaultTargetGroupARN with Region in it.
	TargetGroupARN string
	// Throttle, when more than 0, is how many calls per second the endpoint
	// answers (a token bucket holding as many); the rest get
	// ThrottlingException, as the real API's per-account bucket does.
	Throttle float64
}

// withDefaults is o with its defaults filled: Region from TargetGroupARN
// (else us-east-1), TargetGroupARN from Region.
func (o ELBv2Options) withDefaults() ELBv2Options {
	if o.Region == "" {
		o.Region = arnRegion(o.TargetGroupARN)
	}
	if o.Region == "" {
		o.Region = DefaultELBv2Region
	}
	if o.TargetGroupARN == "" {
		o.TargetGroupARN = strings.Replace(DefaultTargetGroupARN, ":"+DefaultELBv2Region+":", ":"+o.Region+":", 1)
	}
	return o
}

// arnRegion is the region field of an ARN (arn:aws:SERVICE:REGION:…); "" when
// it has none.
func arnRegion(arn string) string {
	f := strings.Split(arn, ":")
	if len(f) < 6 {
		return ""
	}
	return f[3]
}

// Environment variables of the ELBv2 endpoint's key pair.
const (
	ELBv2KeyIDEnv  = "MYTHEX_LB_AWS_ACCESS_KEY_ID"
	ELBv2SecretEnv = "MYTHEX_LB_AWS_SECRET_ACCESS_KEY"
)

// ErrKeyFile is matched (errors.Is) by LoadELBv2Key's errors about the key
// file; the others are about the environment.
var ErrKeyFile = errors.New("ELBv2 key file")

// LoadELBv2Key reads the ELBv2 endpoint's key pair from keyFile (one line
// "ACCESS_KEY_ID SECRET_ACCESS_KEY") when given, else from ELBv2KeyIDEnv and
// ELBv2SecretEnv; ok is false when neither gives one (no endpoint). Errors:
// an unreadable or malformed file (ErrKeyFile), only one of the two
// variables set.
func LoadELBv2Key(keyFile string) (key KeyPair, ok bool, err error) {
	if keyFile == "" {
		key = KeyPair{AccessKeyID: os.Getenv(ELBv2KeyIDEnv), SecretAccessKey: os.Getenv(ELBv2SecretEnv)}
		switch {
		case key.AccessKeyID == "" && key.SecretAccessKey == "":
			return key, false, nil
		case key.AccessKeyID == "" || key.SecretAccessKey == "":
			return key, false, fmt.Errorf("set both $%s and $%s for the ELBv2 endpoint, or neither", ELBv2KeyIDEnv, ELBv2SecretEnv)
		}
		return key, true, nil
	}
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return key, false, fmt.Errorf("%w: %w", ErrKeyFile, err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return key, false, fmt.Errorf("%w %s: want one line \"ACCESS_KEY_ID SECRET_ACCESS_KEY\"", ErrKeyFile, keyFile)
	}
	return KeyPair{AccessKeyID: f[0], SecretAccessKey: f[1]}, true, nil
}

// Validate checks o: a key pair and an ELBv2 target group ARN.
func (o ELBv2Options) Validate() error {
	if o.Key.AccessKeyID == "" || o.Key.SecretAccessKey == "" {
		return errors.New("the ELBv2 endpoint needs an access key id and a secret access key")
	}
	if o.TargetGroupARN != "" && !strings.Contains(o.TargetGroupARN, ":targetgroup/") {
		return fmt.Errorf("target group ARN %q is not an ELBv2 target group ARN (arn:aws:elasticloadbalancing:REGION:ACCOUNT:targetgroup/NAME/ID)", o.TargetGroupARN)
	}
	if o.Throttle < 0 {
		return fmt.Errorf("ELBv2 throttle must be 0 (off) or more calls per second, got %v", o.Throttle)
	}
	return nil
}

// elbv2 is the ELBv2 API endpoint over one target group.
type elbv2 struct {
	g       *TargetGroup
	o       ELBv2Options
	clock   clockwork.Clock
	log     *slog.Logger
	limiter *rate.Limiter // nil: no throttling
	calls   func(action, code string)
}

// newELBv2 returns the ELBv2 handler. calls, when not nil, is told of every
// call (action, and the error code or "" for success).
func newELBv2(g *TargetGroup, o ELBv2Options, clock clockwork.Clock, log *slog.Logger, calls func(action, code string)) *elbv2 {
	o = o.withDefaults()
	e := &elbv2{g: g, o: o, clock: clock, log: log, calls: calls}
	if o.Throttle > 0 {
		e.limiter = rate.NewLimiter(rate.Limit(o.Throttle), max(1, int(math.Ceil(o.Throttle))))
	}
	return e
}

// isELBv2Request reports whether r is an AWS Query protocol request (POST /
// with a form body, or GET /?Action=…) rather than an admin API call.
func isELBv2Request(r *http.Request) bool {
	if r.URL.Path != "/" {
		return false
	}
	if r.Method == http.MethodPost {
		return true
	}
	return r.Method == http.MethodGet && r.URL.Query().Get("Action") != ""
}

// ServeHTTP authenticates, throttles and answers one ELBv2 call. Nothing
// changes unless the call is signed with the key pair and not throttled.
func (e *elbv2) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqID := newRequestID()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		e.fail(w, reqID, "", &queryError{Status: http.StatusBadRequest, Code: "ValidationError", Message: "request body too large or unreadable"})
		return
	}
	if qe := verifySigV4(r, body, e.o.Key, e.o.Region, ELBv2Service, e.clock.Now()); qe != nil {
		e.fail(w, reqID, "", qe)
		return
	}
	params := r.URL.Query()
	if r.Method == http.MethodPost {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			e.fail(w, reqID, "", &queryError{Status: http.StatusBadRequest, Code: "MalformedQueryString", Message: err.Error()})
			return
		}
		for k, v := range form {
			params[k] = v
		}
	}
	action := params.Get("Action")
	if v := params.Get("Version"); v != ELBv2Version {
		e.fail(w, reqID, action, &queryError{Status: http.StatusBadRequest, Code: "InvalidAction",
			Message: fmt.Sprintf("Could not find operation %s for version %s; this endpoint speaks %s", action, v, ELBv2Version)})
		return
	}
	if e.limiter != nil && !e.limiter.AllowN(e.clock.Now(), 1) {
		e.fail(w, reqID, action, &queryError{Status: http.StatusBadRequest, Code: "ThrottlingException", Message: "Rate exceeded"})
		return
	}
	var result any
	var qe *queryError
	switch action {
	case "RegisterTargets":
		result, qe = e.registerTargets(params)
	case "DeregisterTargets":
		result, qe = e.deregisterTargets(params)
	case "DescribeTargetHealth":
		result, qe = e.describeTargetHealth(params)
	case "DescribeTargetGroups":
		result, qe = e.describeTargetGroups(params)
	case "DescribeTargetGroupAttributes":
		result, qe = e.describeTargetGroupAttributes(params)
	case "ModifyTargetGroup":
		result, qe = e.modifyTargetGroup(params)
	case "ModifyTargetGroupAttributes":
		result, qe = e.modifyTargetGroupAttributes(params)
	default:
		qe = &queryError{Status: http.StatusBadRequest, Code: "InvalidAction",
			Message: fmt.Sprintf("The action %s is not valid for this web service; the embedded load balancer answers RegisterTargets, DeregisterTargets, DescribeTargetHealth, DescribeTargetGroups, DescribeTargetGroupAttributes, ModifyTargetGroup and ModifyTargetGroupAttributes", action)}
	}
	if qe != nil {
		e.fail(w, reqID, action, qe)
		return
	}
	if e.calls != nil {
		e.calls(action, "")
	}
	writeQueryResult(w, action, reqID, result)
}

func (e *elbv2) fail(w http.ResponseWriter, reqID, action string, qe *queryError) {
	if e.calls != nil {
		e.calls(action, qe.Code)
	}
	if qe.Status == http.StatusForbidden {
		e.log.Warn("ELBv2 call refused", "action", action, "code", qe.Code, "message", qe.Message)
	}
	writeQueryError(w, reqID, qe)
}

// elbTarget is one Targets.member.N of a request.
type elbTarget struct {
	id      string
	port    int
	hasPort bool
}

// address is the target's host:port in the embedded group.
func (t elbTarget) address() string { return net.JoinHostPort(t.id, strconv.Itoa(t.port)) }

func validationError(format string, args ...any) *queryError {
	return &queryError{Status: http.StatusBadRequest, Code: "ValidationError", Message: fmt.Sprintf(format, args...)}
}

// checkARN answers TargetGroupNotFound unless arn is the group's.
func (e *elbv2) checkARN(params url.Values) *queryError {
	arn := params.Get("TargetGroupArn")
	if arn == "" {
		return validationError("1 validation error detected: Value null at 'targetGroupArn' failed to satisfy constraint: Member must not be null")
	}
	if arn != e.o.TargetGroupARN {
		return &queryError{Status: http.StatusBadRequest, Code: "TargetGroupNotFound",
			Message: fmt.Sprintf("Target groups '%s' not found", arn)}
	}
	return nil
}

// parseTargets reads Targets.member.1… ; required says at least one must be
// given and every one needs a port (registration).
func parseTargets(params url.Values, requirePort bool) ([]elbTarget, *queryError) {
	var out []elbTarget
	for i := 1; ; i++ {
		prefix := "Targets.member." + strconv.Itoa(i) + "."
		id, ok := params[prefix+"Id"]
		if !ok {
			break
		}
		t := elbTarget{id: strings.TrimSpace(id[0])}
		if p := params.Get(prefix + "Port"); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return nil, validationError("Port %q of target %s must be from 1 to 65535", p, t.id)
			}
			t.port, t.hasPort = n, true
		} else if requirePort {
			return nil, validationError("target %s needs a Port: the embedded load balancer's target group has no default port", t.id)
		}
		if net.ParseIP(t.id) == nil {
			return nil, &queryError{Status: http.StatusBadRequest, Code: "InvalidTarget",
				Message: fmt.Sprintf("The following targets are not valid IP addresses: '%s'; the embedded load balancer's target group is of type ip", t.id)}
		}
		out = append(out, t)
	}
	return out, nil
}

// matches lists the known targets t names: the one at its address, or
// every one on its IP when it gives no port.
func matches(all []TargetStatus, t elbTarget) []TargetStatus {
	var out []TargetStatus
	for _, st := range all {
		host, port, err := net.SplitHostPort(st.Address)
		if err != nil || !sameIP(host, t.id) {
			continue
		}
		if !t.hasPort || port == strconv.Itoa(t.port) {
			out = append(out, st)
		}
	}
	return out
}

func sameIP(a, b string) bool {
	ia, ib := net.ParseIP(a), net.ParseIP(b)
	return ia != nil && ib != nil && ia.Equal(ib)
}

func (e *elbv2) registerTargets(params url.Values) (any, *queryError) {
	if qe := e.checkARN(params); qe != nil {
		return nil, qe
	}
	ts, qe := parseTargets(params, true)
	if qe != nil {
		return nil, qe
	}
	if len(ts) == 0 {
		return nil, validationError("1 validation error detected: Value null at 'targets' failed to satisfy constraint: Member must not be null")
	}
	for _, t := range ts {
		addr := t.address()
		id := e.g.IDOf(addr)
		if id == "" {
			id = addr
		}
		_, err := e.g.Register(id, addr)
		if errors.Is(err, ErrTargetConflict) {
			_, err = e.g.Register(addr, addr)
		}
		if err != nil {
			return nil, internalError(err)
		}
	}
	return xmlEmpty{XMLName: resultName("RegisterTargets")}, nil
}

func (e *elbv2) deregisterTargets(params url.Values) (any, *queryError) {
	if qe := e.checkARN(params); qe != nil {
		return nil, qe
	}
	ts, qe := parseTargets(params, false)
	if qe != nil {
		return nil, qe
	}
	if len(ts) == 0 {
		return nil, validationError("1 validation error detected: Value null at 'targets' failed to satisfy constraint: Member must not be null")
	}
	all := e.g.Targets()
	for _, t := range ts {
		for _, st := range matches(all, t) {
			// An unknown target is no error, as in ELBv2.
			if _, err := e.g.Deregister(st.ID); err != nil && !errors.Is(err, ErrTargetNotFound) {
				return nil, internalError(err)
			}
		}
	}
	return xmlEmpty{XMLName: resultName("DeregisterTargets")}, nil
}

func (e *elbv2) describeTargetHealth(params url.Values) (any, *queryError) {
	if qe := e.checkARN(params); qe != nil {
		return nil, qe
	}
	ts, qe := parseTargets(params, false)
	if qe != nil {
		return nil, qe
	}
	all := e.g.Targets()
	res := xmlDescribeTargetHealth{XMLName: resultName("DescribeTargetHealth"), Descriptions: []xmlTargetHealthDescription{}}
	if len(ts) == 0 {
		for _, st := range all {
			res.Descriptions = append(res.Descriptions, healthDescription(st))
		}
		return res, nil
	}
	for _, t := range ts {
		m := matches(all, t)
		if len(m) == 0 {
			d := xmlTargetHealthDescription{
				Target: xmlTarget{ID: t.id, Port: t.port},
				TargetHealth: xmlTargetHealth{State: StateUnused.String(), Reason: string(ReasonNotRegistered),
					Description: describe(ReasonNotRegistered, 0)},
			}
			if t.hasPort {
				d.HealthCheckPort = strconv.Itoa(t.port)
			}
			res.Descriptions = append(res.Descriptions, d)
			continue
		}
		for _, st := range m {
			res.Descriptions = append(res.Descriptions, healthDescription(st))
		}
	}
	return res, nil
}

func healthDescription(st TargetStatus) xmlTargetHealthDescription {
	host, port, _ := net.SplitHostPort(st.Address)
	p, _ := strconv.Atoi(port)
	return xmlTargetHealthDescription{
		HealthCheckPort: port,
		Target:          xmlTarget{ID: host, Port: p},
		TargetHealth:    xmlTargetHealth{State: st.State.String(), Reason: string(st.Reason), Description: st.Description},
	}
}

func (e *elbv2) describeTargetGroups(params url.Values) (any, *queryError) {
	name := e.targetGroupName()
	for i := 1; ; i++ {
		arn, ok := params["TargetGroupArns.member."+strconv.Itoa(i)]
		if !ok {
			break
		}
		if arn[0] != e.o.TargetGroupARN {
			return nil, &queryError{Status: http.StatusBadRequest, Code: "TargetGroupNotFound",
				Message: fmt.Sprintf("Target groups '%s' not found", arn[0])}
		}
	}
	for i := 1; ; i++ {
		n, ok := params["Names.member."+strconv.Itoa(i)]
		if !ok {
			break
		}
		if n[0] != name {
			return nil, &queryError{Status: http.StatusBadRequest, Code: "TargetGroupNotFound",
				Message: fmt.Sprintf("Target groups '%s' not found", n[0])}
		}
	}
	if lbArn := params.Get("LoadBalancerArn"); lbArn != "" && lbArn != e.loadBalancerARN() {
		return nil, &queryError{Status: http.StatusBadRequest, Code: "LoadBalancerNotFound",
			Message: fmt.Sprintf("Load balancers '%s' not found", lbArn)}
	}
	return xmlTargetGroups{XMLName: resultName("DescribeTargetGroups"), TargetGroups: []xmlTargetGroup{e.targetGroup()}}, nil
}

// targetGroupName is the NAME part of the ARN (…:targetgroup/NAME/ID).
func (e *elbv2) targetGroupName() string {
	_, rest, _ := strings.Cut(e.o.TargetGroupARN, ":targetgroup/")
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// loadBalancerARN is the ARN the target group reports as its one load
// balancer: the target group's, with loadbalancer/app in place of
// targetgroup.
func (e *elbv2) loadBalancerARN() string {
	return strings.Replace(e.o.TargetGroupARN, ":targetgroup/", ":loadbalancer/app/", 1)
}

func (e *elbv2) targetGroup() xmlTargetGroup {
	s := e.g.Settings()
	return xmlTargetGroup{
		TargetGroupArn: e.o.TargetGroupARN, TargetGroupName: e.targetGroupName(),
		Protocol: "HTTP", ProtocolVersion: "HTTP1", HealthCheckProtocol: "HTTP", HealthCheckPort: "traffic-port",
		HealthCheckEnabled:         true,
		HealthCheckIntervalSeconds: ceilSeconds(s.HealthCheckInterval),
		HealthCheckTimeoutSeconds:  ceilSeconds(s.HealthCheckTimeout),
		HealthyThresholdCount:      s.Thresholds.Healthy, UnhealthyThresholdCount: s.Thresholds.Unhealthy,
		HealthCheckPath: s.HealthCheckPath, Matcher: xmlMatcher{HTTPCode: "200"},
		LoadBalancerArns: []string{e.loadBalancerARN()}, TargetType: "ip", IPAddressType: "ipv4",
	}
}

// ceilSeconds is d in whole seconds, rounded up: the ELBv2 API has no finer
// unit, and the embedded LB allows sub-second timings for tests.
func ceilSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// Target group attribute keys the endpoint knows.
const (
	attrDeregistrationDelay = "deregistration_delay.timeout_seconds"
	attrAlgorithm           = "load_balancing.algorithm.type"
	attrSlowStart           = "slow_start.duration_seconds"
	attrStickiness          = "stickiness.enabled"
	attrStickinessType      = "stickiness.type"
	attrCrossZone           = "load_balancing.cross_zone.enabled"
)

func (e *elbv2) attributes() []xmlAttribute {
	s := e.g.Settings()
	return []xmlAttribute{
		{attrDeregistrationDelay, strconv.Itoa(ceilSeconds(s.DeregistrationDelay))},
		{attrAlgorithm, s.Algorithm.String()},
		{attrSlowStart, "0"},
		{attrStickiness, "false"},
		{attrStickinessType, "lb_cookie"},
		{attrCrossZone, "use_load_balancer_configuration"},
	}
}

func (e *elbv2) describeTargetGroupAttributes(params url.Values) (any, *queryError) {
	if qe := e.checkARN(params); qe != nil {
		return nil, qe
	}
	return xmlAttributes{XMLName: resultName("DescribeTargetGroupAttributes"), Attributes: e.attributes()}, nil
}

// intParam reads an integer parameter within [lo, hi]; ok false when absent.
func intParam(params url.Values, name string, lo, hi int) (v int, ok bool, qe *queryError) {
	s := params.Get(name)
	if s == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, false, validationError("%s must be an integer from %d to %d, got %q", name, lo, hi, s)
	}
	return n, true, nil
}

func (e *elbv2) modifyTargetGroup(params url.Values) (any, *queryError) {
	if qe := e.checkARN(params); qe != nil {
		return nil, qe
	}
	s := e.g.Settings()
	if p := params.Get("HealthCheckPath"); p != "" {
		if p[0] != '/' || len(p) > 1024 {
			return nil, validationError("HealthCheckPath must start with / and be at most 1024 characters, got %q", p)
		}
		s.HealthCheckPath = p
	}
	// The ALB's documented ranges.
	ints := []struct {
		name   string
		lo, hi int
		set    func(int)
	}{
		{"HealthCheckIntervalSeconds", 5, 300, func(n int) { s.HealthCheckInterval = time.Duration(n) * time.Second }},
		{"HealthCheckTimeoutSeconds", 2, 120, func(n int) { s.HealthCheckTimeout = time.Duration(n) * time.Second }},
		{"HealthyThresholdCount", 2, 10, func(n int) { s.Thresholds.Healthy = n }},
		{"UnhealthyThresholdCount", 2, 10, func(n int) { s.Thresholds.Unhealthy = n }},
	}
	for _, f := range ints {
		n, ok, qe := intParam(params, f.name, f.lo, f.hi)
		if qe != nil {
			return nil, qe
		}
		if ok {
			f.set(n)
		}
	}
	if v := params.Get("HealthCheckProtocol"); v != "" && v != "HTTP" {
		return nil, unsupported("HealthCheckProtocol %s (only HTTP)", v)
	}
	if v := params.Get("HealthCheckPort"); v != "" && v != "traffic-port" {
		return nil, unsupported("HealthCheckPort %s (only traffic-port)", v)
	}
	if v := params.Get("HealthCheckEnabled"); v != "" && v != "true" {
		return nil, unsupported("HealthCheckEnabled %s (health checks are always on)", v)
	}
	if v := params.Get("Matcher.HttpCode"); v != "" && v != "200" {
		return nil, unsupported("Matcher.HttpCode %s (only 200)", v)
	}
	if s.HealthCheckTimeout >= s.HealthCheckInterval {
		return nil, validationError("Health check timeout '%d' must be smaller than the interval '%d'",
			ceilSeconds(s.HealthCheckTimeout), ceilSeconds(s.HealthCheckInterval))
	}
	if err := e.g.Modify(s); err != nil {
		return nil, validationError("%v", err)
	}
	return xmlTargetGroups{XMLName: resultName("ModifyTargetGroup"), TargetGroups: []xmlTargetGroup{e.targetGroup()}}, nil
}

func (e *elbv2) modifyTargetGroupAttributes(params url.Values) (any, *queryError) {
	if qe := e.checkARN(params); qe != nil {
		return nil, qe
	}
	s := e.g.Settings()
	n := 0
	for i := 1; ; i++ {
		prefix := "Attributes.member." + strconv.Itoa(i) + "."
		key, ok := params[prefix+"Key"]
		if !ok {
			break
		}
		n++
		v := params.Get(prefix + "Value")
		switch key[0] {
		case attrDeregistrationDelay:
			secs, err := strconv.Atoi(v)
			if err != nil || secs < 0 || secs > 3600 {
				return nil, validationError("%s must be an integer from 0 to 3600, got %q", attrDeregistrationDelay, v)
			}
			s.DeregistrationDelay = time.Duration(secs) * time.Second
		case attrAlgorithm:
			a, err := ParseAlgorithm(v)
			if err != nil {
				return nil, validationError("%s: %v", attrAlgorithm, err)
			}
			s.Algorithm = a
		case attrSlowStart:
			if v != "0" {
				return nil, unsupported("%s %s (slow start is not implemented; only 0)", attrSlowStart, v)
			}
		case attrStickiness:
			if v != "false" {
				return nil, unsupported("%s %s (no stickiness; only false)", attrStickiness, v)
			}
		case attrStickinessType:
			if v != "lb_cookie" {
				return nil, unsupported("%s %s (only lb_cookie)", attrStickinessType, v)
			}
		case attrCrossZone:
			if v != "use_load_balancer_configuration" && v != "true" {
				return nil, unsupported("%s %s (one zone: only true or use_load_balancer_configuration)", attrCrossZone, v)
			}
		default:
			return nil, validationError("Target group attribute key '%s' is not recognized", key[0])
		}
	}
	if n == 0 {
		return nil, validationError("1 validation error detected: Value null at 'attributes' failed to satisfy constraint: Member must not be null")
	}
	if err := e.g.Modify(s); err != nil {
		return nil, validationError("%v", err)
	}
	return xmlAttributes{XMLName: resultName("ModifyTargetGroupAttributes"), Attributes: e.attributes()}, nil
}

// unsupported answers a valid ALB setting the embedded LB does not
// implement (docs/lb.md lists them).
func unsupported(format string, args ...any) *queryError {
	return &queryError{Status: http.StatusBadRequest, Code: "InvalidConfigurationRequest",
		Message: "the embedded load balancer does not implement " + fmt.Sprintf(format, args...)}
}

func internalError(err error) *queryError {
	if errors.Is(err, ErrClosed) {
		return &queryError{Status: http.StatusServiceUnavailable, Code: "ServiceUnavailable", Message: err.Error()}
	}
	if errors.Is(err, ErrInvalidTarget) {
		return &queryError{Status: http.StatusBadRequest, Code: "InvalidTarget", Message: err.Error()}
	}
	return &queryError{Status: http.StatusInternalServerError, Code: "InternalFailure", Message: err.Error()}
}

package lb

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mythex/mythex/internal/wire"
)

// Metrics are the load balancer's Prometheus metrics, on a registry of their
// own (never the global one). Like an ALB's CloudWatch metrics they keep the
// responses a target gave (HTTPCode_Target_*) apart from those the LB
// generated (HTTPCode_ELB_*). The per-request counters are resolved once, so
// counting a request is an atomic add.
type Metrics struct {
	reg *prometheus.Registry

	requests    *prometheus.CounterVec
	lbErrors    *prometheus.CounterVec
	checks      *prometheus.CounterVec
	transitions *prometheus.CounterVec
	elbv2Calls  *prometheus.CounterVec
	respTime    prometheus.Histogram

	byClass  [6]prometheus.Counter // target responses by status/100 (0 for odd codes)
	lbByCode map[lbKey]prometheus.Counter
	lbByWhy  map[lbKey]prometheus.Counter
}

// lbKey names one kind of LB-generated response.
type lbKey struct {
	status int
	reason string
}

// lbReasons are the X-Mythex-Lb reasons with their status.
var lbReasons = []struct {
	reason string
	status int
}{
	{wire.ReasonNoTargets, http.StatusServiceUnavailable},
	{wire.ReasonTargetRefused, http.StatusBadGateway},
	{wire.ReasonTargetReset, http.StatusBadGateway},
	{wire.ReasonTargetBadResponse, http.StatusBadGateway},
	{wire.ReasonTargetDeregistered, http.StatusBadGateway},
	{wire.ReasonTargetTimeout, http.StatusGatewayTimeout},
	{wire.ReasonBadRequest, http.StatusBadRequest},
	{wire.ReasonBadRequest, http.StatusRequestEntityTooLarge},
}

// NewMetrics registers the LB's metrics, the Go runtime's and the process's
// on a new registry, with a collector that reads g's targets at scrape time.
func NewMetrics(g *TargetGroup) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mythex_lb_requests_total",
			Help: "Requests answered, by source (target: the target answered, as ALB HTTPCode_Target_*; lb: the LB answered itself, as HTTPCode_ELB_*) and status class.",
		}, []string{"source", "class"}),
		lbErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mythex_lb_generated_responses_total",
			Help: "Responses the LB generated itself, by status code and X-Mythex-Lb reason.",
		}, []string{"code", "reason"}),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mythex_lb_health_checks_total",
			Help: "Health checks finished, by target and outcome (passed, code_mismatch, timeout, conn_failed, internal_error).",
		}, []string{"target", "outcome"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mythex_lb_target_transitions_total",
			Help: "Target state changes, by target and the state entered.",
		}, []string{"target", "state"}),
		elbv2Calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mythex_lb_elbv2_calls_total",
			Help: "Calls to the ELBv2 API endpoint, by action and AWS error code (empty when answered).",
		}, []string{"action", "code"}),
		respTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mythex_lb_target_response_seconds",
			Help:    "Time from sending a request to a target to having its whole response (ALB TargetResponseTime).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		lbByCode: map[lbKey]prometheus.Counter{},
		lbByWhy:  map[lbKey]prometheus.Counter{},
	}
	classes := [6]string{"other", "1xx", "2xx", "3xx", "4xx", "5xx"}
	for i, c := range classes {
		m.byClass[i] = m.requests.WithLabelValues("target", c)
	}
	for _, r := range lbReasons {
		key := lbKey{r.status, r.reason}
		m.lbByWhy[key] = m.lbErrors.WithLabelValues(itoa3(r.status), r.reason)
		m.lbByCode[key] = m.requests.WithLabelValues("lb", classes[r.status/100])
	}
	m.reg.MustRegister(m.requests, m.lbErrors, m.checks, m.transitions, m.elbv2Calls, m.respTime,
		&targetCollector{g: g},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the registry the metrics live on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// elbv2Call counts one call to the ELBv2 endpoint.
func (m *Metrics) elbv2Call(action, code string) {
	m.elbv2Calls.WithLabelValues(action, code).Inc()
}

// targetResponse counts a response a target gave, and how long it took.
func (m *Metrics) targetResponse(status int, took time.Duration) {
	c := status / 100
	if c < 1 || c > 5 {
		c = 0
	}
	m.byClass[c].Inc()
	m.respTime.Observe(took.Seconds())
}

// lbResponse counts a response the LB generated.
func (m *Metrics) lbResponse(status int, reason string) {
	key := lbKey{status, reason}
	if c, ok := m.lbByWhy[key]; ok {
		c.Inc()
		m.lbByCode[key].Inc()
		return
	}
	m.lbErrors.WithLabelValues(itoa3(status), reason).Inc()
	m.requests.WithLabelValues("lb", "other").Inc()
}

// itoa3 formats an HTTP status without allocating for the common ones.
func itoa3(n int) string {
	switch n {
	case 400:
		return "400"
	case 413:
		return "413"
	case 502:
		return "502"
	case 503:
		return "503"
	case 504:
		return "504"
	}
	b := []byte{byte('0' + n/100%10), byte('0' + n/10%10), byte('0' + n%10)}
	return string(b)
}

// check counts a finished health check.
func (m *Metrics) check(id string, r CheckResult) {
	m.checks.WithLabelValues(id, r.Outcome.String()).Inc()
}

// change counts a state change.
func (m *Metrics) change(c Change) {
	if c.From.State != c.To.State {
		m.transitions.WithLabelValues(c.ID, c.To.State.String()).Inc()
	}
	if c.To.State == StateUnused {
		m.checks.DeletePartialMatch(prometheus.Labels{"target": c.ID})
	}
}

// targetCollector reports every target's state, in-flight count, rotation and
// request count at scrape time.
type targetCollector struct{ g *TargetGroup }

var (
	descState = prometheus.NewDesc("mythex_lb_target_state",
		"1 for the target's current state (initial, healthy, unhealthy, draining), by target.", []string{"target", "state"}, nil)
	descInFlight = prometheus.NewDesc("mythex_lb_target_in_flight",
		"Requests routed to the target and not yet answered.", []string{"target"}, nil)
	descInRotation = prometheus.NewDesc("mythex_lb_target_in_rotation",
		"1 when a new request may be routed to the target (accounts for fail-open).", []string{"target"}, nil)
	descTargetRequests = prometheus.NewDesc("mythex_lb_target_requests_total",
		"Requests routed to the target since it was registered (ALB RequestCountPerTarget).", []string{"target"}, nil)
	descFailOpen = prometheus.NewDesc("mythex_lb_fail_open",
		"1 when no target is healthy and the LB routes to every registered target.", nil, nil)
)

func (c *targetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descState
	ch <- descInFlight
	ch <- descInRotation
	ch <- descTargetRequests
	ch <- descFailOpen
}

func (c *targetCollector) Collect(ch chan<- prometheus.Metric) {
	c.g.mu.Lock()
	type row struct {
		id       string
		state    State
		inFlight int64
		in       bool
		requests uint64
	}
	rows := make([]row, 0, len(c.g.order))
	for _, t := range c.g.order {
		rows = append(rows, row{t.id, t.health.State, t.inFlight.Load(), t.inRotation, t.requests.Load()})
	}
	c.g.mu.Unlock()
	for _, r := range rows {
		for s := StateInitial; s <= StateDraining; s++ {
			v := 0.0
			if r.state == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, v, r.id, s.String())
		}
		ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(r.inFlight), r.id)
		ch <- prometheus.MustNewConstMetric(descInRotation, prometheus.GaugeValue, boolFloat(r.in), r.id)
		ch <- prometheus.MustNewConstMetric(descTargetRequests, prometheus.CounterValue, float64(r.requests), r.id)
	}
	ch <- prometheus.MustNewConstMetric(descFailOpen, prometheus.GaugeValue, boolFloat(c.g.FailingOpen()))
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

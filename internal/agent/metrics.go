package agent

import "github.com/prometheus/client_golang/prometheus"

// metrics are the agent's Prometheus series.
type metrics struct {
	ops        *prometheus.CounterVec
	recoveries prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mythex_agent_operations_total",
			Help: "Operations the agent carried out, by operation and result (ok, error).",
		}, []string{"op", "result"}),
		recoveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mythex_agent_lease_recoveries_total",
			Help: "Deploy leases that expired and made the agent return the host to its last good definition.",
		}),
	}
	reg.MustRegister(m.ops, m.recoveries)
	return m
}

func (m *metrics) op(name string, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.ops.WithLabelValues(name, result).Inc()
}

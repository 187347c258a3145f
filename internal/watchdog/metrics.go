package watchdog

import "github.com/prometheus/client_golang/prometheus"

// metrics are the watchdog's Prometheus series. Label values are few and
// fixed: decision kinds, causes, round results, and the definition's service
// names.
type metrics struct {
	rounds      *prometheus.CounterVec
	decisions   *prometheus.CounterVec
	heals       *prometheus.CounterVec
	strikes     *prometheus.GaugeVec
	crashLoop   *prometheus.GaugeVec
	maintenance prometheus.Gauge
}

// Round results, the result label of mythex_watchdog_rounds_total.
const (
	roundChecked = "checked"
	roundSkipped = "skipped"
	roundError   = "error"
)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mythex_watchdog_rounds_total",
			Help: "Watchdog rounds, by result (checked, skipped, error) and reason (lock-held, maintenance, no-definition, definition, lock, runtime; empty when checked).",
		}, []string{"result", "reason"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mythex_watchdog_decisions_total",
			Help: "Watchdog decisions, one per service per round, by decision (skip-locked, skip-maintenance, ok, wait, strike, drift, heal, backoff) and reason (the cause: lock-held, maintenance, healthy, starting, platform-restarting, not-running, exited, stopped, unhealthy, drift-version, drift-spec).",
		}, []string{"decision", "reason"}),
		heals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mythex_watchdog_heals_total",
			Help: "Services the watchdog (re)started from the current definition, by service and result (ok, error).",
		}, []string{"service", "result"}),
		strikes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mythex_watchdog_strikes",
			Help: "Consecutive failed watchdog checks of each service of the current definition (a heal comes at failures_before_heal).",
		}, []string{"service"}),
		crashLoop: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mythex_watchdog_crash_looping",
			Help: "1 while a service is crash-looping (healed repeatedly without staying up; heals back off), else 0.",
		}, []string{"service"}),
		maintenance: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mythex_watchdog_maintenance",
			Help: "1 while maintenance mode pauses healing on this host, else 0.",
		}),
	}
	reg.MustRegister(m.rounds, m.decisions, m.heals, m.strikes, m.crashLoop, m.maintenance)
	return m
}

// forget drops the per-service series of a service no longer in the
// definition.
func (m *metrics) forget(service string) {
	m.strikes.DeleteLabelValues(service)
	m.crashLoop.DeleteLabelValues(service)
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

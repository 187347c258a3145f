package lb

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mythex/mythex/internal/wire"
)

func TestMetrics_CountRequestsByWhoAnswered(t *testing.T) {
	e := startLB(t, testSettings())
	wantLBError(t, e.get("/"), http.StatusServiceUnavailable, wire.ReasonNoTargets)
	e.register("a", backendAddr(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/500" {
			w.WriteHeader(500)
		}
	})))
	body(t, e.get("/"))
	body(t, e.get("/"))
	body(t, e.get("/500"))
	m := e.srv.Metrics
	tests := []struct {
		name string
		c    prometheus.Collector
		want float64
	}{
		{"target 2xx", m.requests.WithLabelValues("target", "2xx"), 2},
		{"target 5xx (the app's own)", m.requests.WithLabelValues("target", "5xx"), 1},
		{"lb 5xx", m.requests.WithLabelValues("lb", "5xx"), 1},
		{"lb 503 no-targets", m.lbErrors.WithLabelValues("503", wire.ReasonNoTargets), 1},
		{"lb 502 refused", m.lbErrors.WithLabelValues("502", wire.ReasonTargetRefused), 0},
	}
	for _, tt := range tests {
		if got := testutil.ToFloat64(tt.c); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMetrics_TargetStatesAndChecks(t *testing.T) {
	h := newHarness(t, testSettings())
	m := NewMetrics(h.g)
	onCheck, onChange := h.g.deps.OnCheck, h.g.deps.OnChange
	h.g.deps.OnCheck = func(id string, r CheckResult) { m.check(id, r); onCheck(id, r) }
	h.g.deps.OnChange = func(c Change) { m.change(c); onChange(c) }
	h.register("a", addrA, modePass)
	h.hc.set(addrA, modeCode503)
	h.tick(testSettings().HealthCheckInterval, "a")
	h.tick(testSettings().HealthCheckInterval, "a")
	expected := `
# HELP mythex_lb_target_state 1 for the target's current state (initial, healthy, unhealthy, draining), by target.
# TYPE mythex_lb_target_state gauge
mythex_lb_target_state{state="draining",target="a"} 0
mythex_lb_target_state{state="healthy",target="a"} 0
mythex_lb_target_state{state="initial",target="a"} 0
mythex_lb_target_state{state="unhealthy",target="a"} 1
# HELP mythex_lb_target_in_rotation 1 when a new request may be routed to the target (accounts for fail-open).
# TYPE mythex_lb_target_in_rotation gauge
mythex_lb_target_in_rotation{target="a"} 1
# HELP mythex_lb_fail_open 1 when no target is healthy and the LB routes to every registered target.
# TYPE mythex_lb_fail_open gauge
mythex_lb_fail_open 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(expected),
		"mythex_lb_target_state", "mythex_lb_target_in_rotation", "mythex_lb_fail_open"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.checks.WithLabelValues("a", "code_mismatch")); got != 2 {
		t.Errorf("code_mismatch checks of a = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.transitions.WithLabelValues("a", "unhealthy")); got != 1 {
		t.Errorf("transitions of a into unhealthy = %v, want 1", got)
	}
}

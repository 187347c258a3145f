package probe

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"
	"time"
)

func keysOf(t *testing.T, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is not an object", v)
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func sorted(ks ...string) []string { sort.Strings(ks); return ks }

// TestReport_MarshalJSON pins the schema mythex measure --json prints.
func TestReport_MarshalJSON(t *testing.T) {
	r := Report{
		URL: "http://lb/", Rate: 500, StartedAt: t0, Elapsed: 30 * time.Second, MaxInFlight: 1216,
		Requests: 15000, ReachedNothing: 3, AppErrors: 2, DrainSignals: 1, OK: 14994, LateSends: 7, MaxSendLag: 1500 * time.Microsecond,
		Latency:     Latency{P50: time.Millisecond, P90: 2 * time.Millisecond, P99: 5 * time.Millisecond, P999: 9 * time.Millisecond, Max: 12500 * time.Microsecond, Mean: 1200 * time.Microsecond},
		Reasons:     []ReasonCount{{Class: ClassReachedNothing, Reason: ReasonLBMarked, Status: 502, Detail: "target-refused", Count: 3}},
		Versions:    map[string]int64{"v1": 10000, "v2": 5000},
		Command:     &CommandResult{Argv: []string{"deploy", "--all"}, ExitCode: 3, Error: "exit status 3", Elapsed: 1500 * time.Millisecond},
		Buckets:     []Bucket{{Second: 0, Requests: 500, OK: 500, MaxLatency: 2 * time.Millisecond, Versions: map[string]int64{"v1": 500}}},
		NewConns:    4,
		SendLatency: Latency{Max: time.Millisecond},
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	wantTop := sorted("url", "rate", "started_at", "elapsed_seconds", "max_in_flight", "requests", "reached_nothing",
		"app_errors", "drain_signals", "ok", "late_sends", "unsent", "probe_errors", "max_send_lag_ms", "new_conns",
		"latency_ms", "send_latency_ms", "reasons", "versions", "hosts", "error_samples", "command", "buckets")
	if ks := keysOf(t, got); !reflect.DeepEqual(ks, wantTop) {
		t.Errorf("top-level keys %v\nwant %v", ks, wantTop)
	}
	if ks := keysOf(t, got["latency_ms"]); !reflect.DeepEqual(ks, sorted("p50", "p90", "p99", "p99_9", "max", "mean")) {
		t.Errorf("latency keys %v", ks)
	}
	bucket := got["buckets"].([]any)[0]
	if ks := keysOf(t, bucket); !reflect.DeepEqual(ks, sorted("second", "requests", "ok", "reached_nothing", "app_errors",
		"drain_signals", "probe_errors", "late_sends", "unsent", "max_latency_ms", "p50_latency_ms", "p99_latency_ms", "versions", "hosts")) {
		t.Errorf("bucket keys %v", ks)
	}
	if ks := keysOf(t, got["command"]); !reflect.DeepEqual(ks, sorted("argv", "exit_code", "error", "elapsed_seconds")) {
		t.Errorf("command keys %v", ks)
	}
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"requests", got["requests"], 15000.0},
		{"reached_nothing", got["reached_nothing"], 3.0},
		{"latency_ms.p99_9", got["latency_ms"].(map[string]any)["p99_9"], 9.0},
		{"latency_ms.max", got["latency_ms"].(map[string]any)["max"], 12.5},
		{"max_send_lag_ms", got["max_send_lag_ms"], 1.5},
		{"elapsed_seconds", got["elapsed_seconds"], 30.0},
		{"command.exit_code", got["command"].(map[string]any)["exit_code"], 3.0},
		{"command.elapsed_seconds", got["command"].(map[string]any)["elapsed_seconds"], 1.5},
		{"reasons[0].reason", got["reasons"].([]any)[0].(map[string]any)["reason"], "lb-marked"},
		{"reasons[0].class", got["reasons"].([]any)[0].(map[string]any)["class"], "reached_nothing"},
		{"buckets[0].max_latency_ms", bucket.(map[string]any)["max_latency_ms"], 2.0},
		{"buckets[0].versions.v1", bucket.(map[string]any)["versions"].(map[string]any)["v1"], 500.0},
		{"buckets[0].hosts is an object, not null", bucket.(map[string]any)["hosts"], map[string]any{}},
		{"hosts is an object, not null", got["hosts"], map[string]any{}},
		{"error_samples is a list, not null", got["error_samples"], []any{}},
		{"started_at", got["started_at"], "2026-01-02T03:04:05Z"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestReport_MarshalJSONEmpty(t *testing.T) {
	b, err := json.Marshal(Report{})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["command"] != nil {
		t.Errorf("command = %v, want null without a command", got["command"])
	}
	if bs, ok := got["buckets"].([]any); !ok || len(bs) != 0 {
		t.Errorf("buckets = %#v, want []", got["buckets"])
	}
}

func TestReport_Complete(t *testing.T) {
	cases := []struct {
		name string
		r    Report
		want bool
	}{
		{"clean", Report{Requests: 10, OK: 10}, true},
		{"reached nothing is still a complete measurement", Report{Requests: 10, ReachedNothing: 10}, true},
		{"unsent", Report{Requests: 10, OK: 10, Unsent: 1}, false},
		{"probe errors", Report{Requests: 10, OK: 9, ProbeErrors: 1}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Complete(); got != tc.want {
				t.Errorf("Complete() = %v, want %v", got, tc.want)
			}
		})
	}
}

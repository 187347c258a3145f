package lb

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/lbapi"
)

func TestAdmin_RequiresTheTokenAndChangesNothingWithout(t *testing.T) {
	h := newHarness(t, testSettings())
	h.register("a", addrA, modePass)
	admin, err := NewAdmin(h.g, NewMetrics(h.g), testToken)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(admin)
	t.Cleanup(ts.Close)
	before := h.g.Targets()

	requests := []struct {
		name, method, path, body string
	}{
		{"list", "GET", "/v1/targets", ""},
		{"get one", "GET", "/v1/targets/a", ""},
		{"register", "POST", "/v1/targets", `{"id":"b","address":"127.0.0.1:9102"}`},
		{"deregister", "DELETE", "/v1/targets/a", ""},
		{"metrics", "GET", "/metrics", ""},
		{"settings", "GET", "/v1/settings", ""},
		{"set settings", "PUT", "/v1/settings", wireSettings(`"health_check_interval_seconds":9`)},
	}
	auths := []struct{ name, header string }{
		{"no token", ""},
		{"wrong token", "Bearer nope"},
		{"token without Bearer", testToken},
		{"token with a suffix", "Bearer " + testToken + "x"},
	}
	for _, r := range requests {
		for _, a := range auths {
			t.Run(r.name+"/"+a.name, func(t *testing.T) {
				req, _ := http.NewRequest(r.method, ts.URL+r.path, strings.NewReader(r.body))
				if a.header != "" {
					req.Header.Set("Authorization", a.header)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("%s %s with %s = %d, want 401", r.method, r.path, a.name, resp.StatusCode)
				}
				if strings.Contains(string(b), "127.0.0.1") {
					t.Fatalf("401 body leaks target data: %q", b)
				}
			})
		}
	}
	if after := h.g.Targets(); !reflect.DeepEqual(before, after) {
		t.Fatalf("targets changed by refused requests:\nbefore %+v\nafter  %+v", before, after)
	}
	if s := h.g.Settings(); s != testSettings() {
		t.Fatalf("settings changed by refused requests: %+v", s)
	}
}

// wireSettings is a PUT /v1/settings body: testSettings with the given
// "field":value pairs in place of theirs.
func wireSettings(over ...string) string {
	fields := map[string]string{
		"health_check_path": `"/healthz"`, "health_check_interval_seconds": "5", "health_check_timeout_seconds": "2",
		"healthy_threshold": "3", "unhealthy_threshold": "2", "deregistration_delay_seconds": "30", "algorithm": `"round_robin"`,
	}
	for _, o := range over {
		k, v, _ := strings.Cut(o, ":")
		k = strings.Trim(k, `"`)
		if v == "" {
			delete(fields, k)
			continue
		}
		fields[k] = v
	}
	var parts []string
	for _, k := range settingsFields {
		if v, ok := fields[k]; ok {
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
		}
	}
	for k, v := range fields {
		if !slices.Contains(settingsFields, k) {
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// The admin API reads and sets the target group's settings, as an ALB's
// ModifyTargetGroup(Attributes); a refused PUT changes nothing.
func TestAdmin_Settings(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantIn     string
		want       func(Settings) Settings // nil: unchanged
	}{
		{"every field", wireSettings(`"health_check_interval_seconds":0.5`, `"health_check_timeout_seconds":0.25`, `"healthy_threshold":2`,
			`"deregistration_delay_seconds":0`, `"algorithm":"least_outstanding_requests"`, `"health_check_path":"/up"`), 200,
			`"health_check_interval_seconds":0.5`, func(s Settings) Settings {
				s.HealthCheckPath, s.HealthCheckInterval, s.HealthCheckTimeout = "/up", 500*time.Millisecond, 250*time.Millisecond
				s.Thresholds.Healthy, s.DeregistrationDelay, s.Algorithm = 2, 0, LeastOutstandingRequests
				return s
			}},
		{"a field missing", wireSettings(`"deregistration_delay_seconds":`), 400, "missing deregistration_delay_seconds", nil},
		{"an unknown field", wireSettings(`"slow_start_seconds":30`), 400, "unknown field", nil},
		{"timeout not under the interval", wireSettings(`"health_check_timeout_seconds":5`), 400, "load_balancer.health_check.timeout", nil},
		{"negative delay", wireSettings(`"deregistration_delay_seconds":-1`), 400, "deregistration_delay_seconds must be from 0", nil},
		{"unknown algorithm", wireSettings(`"algorithm":"random"`), 400, "unknown algorithm", nil},
		{"not JSON", `{"health`, 400, "JSON object", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testSettings())
			admin, err := NewAdmin(h.g, NewMetrics(h.g), testToken)
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(admin)
			t.Cleanup(ts.Close)
			req, _ := http.NewRequest("PUT", ts.URL+"/v1/settings", strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(b), tc.wantIn) {
				t.Fatalf("PUT %s = %d %s\nwant %d containing %s", tc.body, resp.StatusCode, b, tc.wantStatus, tc.wantIn)
			}
			want := testSettings()
			if tc.want != nil {
				want = tc.want(want)
			}
			if got := h.g.Settings(); got != want {
				t.Fatalf("settings after PUT:\n got %+v\nwant %+v", got, want)
			}
			req, _ = http.NewRequest("GET", ts.URL+"/v1/settings", nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got lbapi.Settings
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || got != want.Wire() {
				t.Fatalf("GET /v1/settings = %+v, %v; want %+v", got, err, want.Wire())
			}
		})
	}
}

func TestAdmin_Routes(t *testing.T) {
	h := newHarness(t, testSettings())
	h.register("a", addrA, modePass)
	admin, err := NewAdmin(h.g, NewMetrics(h.g), testToken)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(admin)
	t.Cleanup(ts.Close)
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantIn                   string
	}{
		{"list", "GET", "/v1/targets", "", 200, `"targets":[{"id":"a","address":"127.0.0.1:9101","state":"healthy"`},
		{"one", "GET", "/v1/targets/a", "", 200, `"in_rotation":true,"in_flight":0,"last_checks":[{"at":"`},
		{"unknown", "GET", "/v1/targets/zz", "", 404, `"error":"target not found: \"zz\""`},
		{"register", "POST", "/v1/targets", `{"id":"b","address":"127.0.0.1:9102"}`, 200, `"state":"initial","reason":"Elb.RegistrationInProgress"`},
		{"register bad json", "POST", "/v1/targets", `{"id":`, 400, `"error":"body must be`},
		{"register unknown field", "POST", "/v1/targets", `{"id":"c","address":"127.0.0.1:9103","port":1}`, 400, `unknown field`},
		{"register bad address", "POST", "/v1/targets", `{"id":"c","address":"nowhere"}`, 400, `invalid target`},
		{"register conflict", "POST", "/v1/targets", `{"id":"a","address":"127.0.0.1:9999"}`, 409, `deregister it first`},
		{"deregister unknown", "DELETE", "/v1/targets/zz", "", 404, `target not found`},
		{"deregister", "DELETE", "/v1/targets/b", "", 200, `"state":"draining","reason":"Target.DeregistrationInProgress"`},
		{"metrics", "GET", "/metrics", "", 200, `mythex_lb_target_state{state="healthy",target="a"} 1`},
		{"wrong method", "PUT", "/v1/targets/a", "", 405, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(tt.method, tt.path, tt.body)
			if status != tt.wantStatus || !strings.Contains(body, tt.wantIn) {
				t.Fatalf("%s %s = %d %s\nwant %d containing %s", tt.method, tt.path, status, body, tt.wantStatus, tt.wantIn)
			}
		})
	}
}

func TestAdmin_NeedsAToken(t *testing.T) {
	h := newHarness(t, testSettings())
	if _, err := NewAdmin(h.g, NewMetrics(h.g), ""); err == nil {
		t.Fatal("NewAdmin with an empty token: no error")
	}
}

func TestCheckAdminAddress(t *testing.T) {
	tests := []struct {
		addr        string
		allowRemote bool
		wantErr     bool
	}{
		{"127.0.0.1:8079", false, false},
		{"localhost:8079", false, false},
		{"[::1]:8079", false, false},
		{"0.0.0.0:8079", false, true},
		{":8079", false, true},
		{"10.0.0.5:8079", false, true},
		{"0.0.0.0:8079", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := CheckAdminAddress(tt.addr, tt.allowRemote)
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrAdminNotLoopback)) {
				t.Fatalf("CheckAdminAddress(%q, %v) = %v, want error %v (ErrAdminNotLoopback)", tt.addr, tt.allowRemote, err, tt.wantErr)
			}
		})
	}
}

func TestTargetStatus_JSONShape(t *testing.T) {
	st := TargetStatus{ID: "web-1", Address: "127.0.0.1:9101", State: StateDraining, Reason: ReasonDeregistrationInProgress,
		LastChecks: []CheckStatus{{OK: true, Status: 200, DurationSeconds: 0.5}}}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "address", "state", "reason", "description", "in_rotation", "in_flight", "last_checks"} {
		if _, ok := m[k]; !ok {
			t.Errorf("TargetStatus JSON lacks %q: %s", k, b)
		}
	}
	check := m["last_checks"].([]any)[0].(map[string]any)
	for _, k := range []string{"at", "ok", "status", "duration_seconds", "error"} {
		if _, ok := check[k]; !ok {
			t.Errorf("check JSON lacks %q: %s", k, b)
		}
	}
	if m["state"] != "draining" {
		t.Errorf("state = %v, want draining", m["state"])
	}
}

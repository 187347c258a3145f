package lb

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
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

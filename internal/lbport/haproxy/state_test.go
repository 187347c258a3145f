package haproxy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/lbport"
)

func TestTargetOf(t *testing.T) {
	up := &ServerStat{Server: "s", Status: "UP", CheckStatus: "L7OK"}
	with := func(s ServerStat, f func(*ServerStat)) *ServerStat { f(&s); return &s }
	tests := []struct {
		name    string
		stat    *ServerStat
		admin   AdminState
		want    lbport.State
		reason  lbport.Reason
		inRot   bool
		inFlght int
	}{
		{"unknown server", nil, 0, lbport.StateUnused, lbport.ReasonNotRegistered, false, 0},
		{"up", up, 0, lbport.StateHealthy, lbport.ReasonNone, true, 0},
		{"up, failing but not yet down", with(*up, func(s *ServerStat) { s.Status = "UP 1/2"; s.CheckStatus = "L7STS" }), 0, lbport.StateHealthy, lbport.ReasonNone, true, 0},
		{"in flight is scur+qcur", with(*up, func(s *ServerStat) { s.Scur, s.Qcur = 3, 2 }), 0, lbport.StateHealthy, lbport.ReasonNone, true, 5},
		{"drain while up", with(*up, func(s *ServerStat) { s.Status = "DRAIN"; s.Scur = 1 }), AdminForcedDrain, lbport.StateDraining, lbport.ReasonDeregistrationInProgress, false, 1},
		{"drain while down (status says DOWN)", with(*up, func(s *ServerStat) { s.Status = "DOWN"; s.CheckStatus = "L4CON" }), AdminForcedDrain, lbport.StateDraining, lbport.ReasonDeregistrationInProgress, false, 0},
		{"maint, idle", with(*up, func(s *ServerStat) { s.Status = "MAINT" }), AdminForcedMaint, lbport.StateUnused, lbport.ReasonNotRegistered, false, 0},
		{"maint, sessions left", with(*up, func(s *ServerStat) { s.Status = "MAINT"; s.Scur = 2 }), AdminForcedMaint, lbport.StateDraining, lbport.ReasonDeregistrationInProgress, false, 2},
		{"disabled in the config", with(*up, func(s *ServerStat) { s.Status = "MAINT" }), AdminConfigMaint, lbport.StateUnused, lbport.ReasonNotRegistered, false, 0},
		{"maint via a tracked server", with(*up, func(s *ServerStat) { s.Status = "MAINT (via b/t)" }), AdminInheritedMaint, lbport.StateUnused, lbport.ReasonNotRegistered, false, 0},
		{"NOLB", with(*up, func(s *ServerStat) { s.Status = "NOLB" }), 0, lbport.StateDraining, lbport.ReasonDeregistrationInProgress, false, 0},
		{"no check", &ServerStat{Status: "no check"}, 0, lbport.StateUnavailable, lbport.ReasonHealthCheckDisabled, true, 0},
		{"down, first check pending", with(*up, func(s *ServerStat) { s.Status = "DOWN"; s.CheckStatus = "INI" }), 0, lbport.StateInitial, lbport.ReasonRegistrationInProgress, false, 0},
		{"down, rising", with(*up, func(s *ServerStat) { s.Status = "DOWN 1/2" }), 0, lbport.StateInitial, lbport.ReasonInitialHealthChecking, false, 0},
		{"down, bad status", with(*up, func(s *ServerStat) { s.Status = "DOWN"; s.CheckStatus = "L7STS" }), 0, lbport.StateUnhealthy, lbport.ReasonResponseCodeMismatch, false, 0},
		{"down, timeout", with(*up, func(s *ServerStat) { s.Status = "DOWN"; s.CheckStatus = "L7TOUT" }), 0, lbport.StateUnhealthy, lbport.ReasonTimeout, false, 0},
		{"down, refused", with(*up, func(s *ServerStat) { s.Status = "DOWN"; s.CheckStatus = "L4CON" }), 0, lbport.StateUnhealthy, lbport.ReasonFailedHealthChecks, false, 0},
		{"unknown status", with(*up, func(s *ServerStat) { s.Status = "WEIRD" }), 0, lbport.StateUnhealthy, lbport.ReasonInternalError, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &ServerState{Admin: tc.admin}
			got := targetOf(lbport.TargetRef{ID: "web-1"}, tc.stat, st)
			if got.State != tc.want || got.Reason != tc.reason || got.InRotation != tc.inRot || got.InFlight != tc.inFlght || got.ID != "web-1" {
				t.Fatalf("got %+v; want %v %q in rotation %v, %d in flight", got, tc.want, tc.reason, tc.inRot, tc.inFlght)
			}
		})
	}
}

func TestParseStat(t *testing.T) {
	ans := "# pxname,svname,qcur,qmax,scur,status,check_status,check_desc,check_rise,check_fall,addr\n" +
		"front,FRONTEND,,,0,OPEN,,,,,\n" +
		"app,web-1,1,0,2,UP,L7OK,Layer7 check passed,2,3,127.0.0.1:81\n" +
		"app,web-2,0,0,0,no check,,,,,127.0.0.1:82\n" +
		"other,web-1,0,0,9,UP,L7OK,,2,3,\n" +
		"app,BACKEND,0,0,2,UP,,,,,\n"
	got, err := ParseStat(ans, "app")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != (ServerStat{Backend: "app", Server: "web-1", Qcur: 1, Scur: 2, Status: "UP", CheckStatus: "L7OK", CheckDesc: "Layer7 check passed", CheckRise: 2, CheckFall: 3, Addr: "127.0.0.1:81"}) {
		t.Fatalf("%+v", got)
	}
	if got[1].HasCheck() || got[1].CheckRise != -1 {
		t.Fatalf("%+v", got[1])
	}
	if _, err := ParseStat("# pxname,svname\napp,web-1\n", "app"); err == nil {
		t.Fatal("a header without the needed columns was accepted")
	}
	var ue *lbport.UnexpectedError
	if _, err := ParseStat("", "app"); !errors.As(err, &ue) {
		t.Fatalf("empty: %v", err)
	}
}

func TestParseServersState(t *testing.T) {
	ans := "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight\n" +
		"3 app 1 web-1 127.0.0.1 2 8 1\n3 app 2 web-2 127.0.0.1 0 1 1\n"
	got, err := ParseServersState(ans)
	if err != nil {
		t.Fatal(err)
	}
	if !got["web-1"].Admin.Drain() || got["web-1"].Admin.Maint() || got["web-1"].OpState != 2 || !got["web-2"].Admin.Maint() {
		t.Fatalf("%+v", got)
	}
	for _, bad := range []string{"2\n", "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state\n3 app 1 web-1 x y z\n"} {
		if _, err := ParseServersState(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

func TestAnswerErr(t *testing.T) {
	tests := []struct {
		ans  string
		want error
	}{
		{"", nil},
		{"Permission denied", lbport.ErrUnauthorized},
		{"No such backend.", lbport.ErrTargetGroupNotFound},
		{"Can't find backend.", lbport.ErrTargetGroupNotFound},
		{"No such server.", lbport.ErrInvalidTarget},
		{"Unknown command: 'frob'", lbport.ErrUnsupported},
	}
	for _, tc := range tests {
		err := answerErr("x", tc.ans)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%q: %v, want %v", tc.ans, err, tc.want)
		}
	}
	var ue *lbport.UnexpectedError
	if err := answerErr("x", "something else"); !errors.As(err, &ue) {
		t.Errorf("an unknown answer: %v", err)
	}
}

func TestParseDuration(t *testing.T) {
	tests := map[string]time.Duration{"2000": 2 * time.Second, "100ms": 100 * time.Millisecond, "5s": 5 * time.Second, "1m": time.Minute, "500us": 500 * time.Microsecond}
	for in, want := range tests {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "s", "5x", "-1s", "99999999999999999999d"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestVersionAtLeast(t *testing.T) {
	tests := []struct {
		v    string
		want bool
	}{
		{"2.6.12-1+deb12u4", true}, {"2.0.0", true}, {"3.0-dev5", true}, {"1.8.19", false}, {"1.9", false}, {"", false}, {"garbage", false},
	}
	for _, tc := range tests {
		if got := versionAtLeast(tc.v, MinVersion); got != tc.want {
			t.Errorf("%q: %v", tc.v, got)
		}
	}
}

func TestReadConfig(t *testing.T) {
	cfg := `global
  stats socket /run/haproxy/admin.sock mode 600 level admin
defaults
  mode http
  timeout check 2s
  default-server inter 3s
backend app
  option httpchk GET /up
  default-server fall 4 rise 5
  server web-1 10.0.0.1:80 check
  server web-2 10.0.0.2:80 check inter 500ms
  server web-3 10.0.0.3:80
backend other
  server x 10.0.0.9:80
`
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := ReadConfig(path, "app")
	if err != nil {
		t.Fatal(err)
	}
	if b.CheckPath != "/up" || b.TimeoutCheck != 2*time.Second || len(b.Order) != 3 {
		t.Fatalf("%+v", b)
	}
	want := map[string]ServerConfig{
		"web-1": {Name: "web-1", Address: "10.0.0.1:80", Check: true, Inter: 3 * time.Second, Fall: 4, Rise: 5},
		"web-2": {Name: "web-2", Address: "10.0.0.2:80", Check: true, Inter: 500 * time.Millisecond, Fall: 4, Rise: 5},
		"web-3": {Name: "web-3", Address: "10.0.0.3:80", Check: false, Inter: 3 * time.Second, Fall: 4, Rise: 5},
	}
	for n, w := range want {
		if b.Servers[n] != w {
			t.Errorf("%s: %+v, want %+v", n, b.Servers[n], w)
		}
	}
	if _, err := ReadConfig(path, "nope"); !errors.Is(err, lbport.ErrTargetGroupNotFound) {
		t.Fatalf("unknown backend: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != cfg {
		t.Fatal("ReadConfig changed haproxy.cfg")
	}
}

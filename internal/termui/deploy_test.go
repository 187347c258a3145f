package termui

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/deploy"
)

func events() []deploy.Event {
	t0 := time.Now()
	return []deploy.Event{
		{At: t0, Host: "web-1", Phase: deploy.PhaseLease, Kind: deploy.EventBegin},
		{At: t0, Host: "web-1", Phase: deploy.PhaseLease, Kind: deploy.EventEnd, Elapsed: 0.01},
		{At: t0, Host: "web-1", Phase: deploy.PhaseDrain, Kind: deploy.EventBegin},
		{At: t0.Add(time.Second), Host: "web-1", Phase: deploy.PhaseDrain, Kind: deploy.EventEnd, Elapsed: 1, Detail: "out of rotation"},
		{At: t0.Add(time.Second), Host: "web-1", Phase: deploy.PhaseStop, Kind: deploy.EventNote, Detail: "gateway ignored SIGTERM"},
		{At: t0.Add(2 * time.Second), Host: "web-2", Phase: deploy.PhaseHealthy, Kind: deploy.EventProgress, Elapsed: 1.5, Detail: "load balancer reports unhealthy (1/2 checks passed)"},
		{At: t0.Add(2 * time.Second), Host: "web-2", Phase: deploy.PhaseStart, Kind: deploy.EventFail, Elapsed: 0.5, Detail: "exited with code 1"},
	}
}

func TestDeployRenderer_Modes(t *testing.T) {
	cases := []struct {
		name  string
		mode  Mode
		check func(t *testing.T, out string)
	}{
		{"plain", Plain, func(t *testing.T, out string) {
			for _, want := range []string{"web-1    drain     ok", "out of rotation", "note", "gateway ignored SIGTERM", "web-2    start     FAIL", "exited with code 1", "web-2    healthy   …", "1/2 checks passed"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "\x1b[") {
				t.Error("plain output has terminal escapes")
			}
		}},
		{"json", JSON, func(t *testing.T, out string) {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != len(events()) {
				t.Fatalf("%d lines, want one per event", len(lines))
			}
			var e deploy.Event
			if err := json.Unmarshal([]byte(lines[3]), &e); err != nil || e.Phase != deploy.PhaseDrain || e.Elapsed != 1 {
				t.Errorf("line 4 = %q (%v)", lines[3], err)
			}
		}},
		{"tty", TTY, func(t *testing.T, out string) {
			if !strings.Contains(out, "\x1b[1A\x1b[2K") {
				t.Error("tty output does not rewrite lines in place")
			}
			if !strings.Contains(out, "✗ web-2") || !strings.Contains(out, "drain 1.0s") {
				t.Errorf("tty output lacks host lines:\n%q", out)
			}
			if strings.Contains(out, "· \n") {
				t.Errorf("a host line ends in a dangling separator:\n%q", out)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			r := NewDeployRenderer(&buf, tc.mode)
			for _, e := range events() {
				r.Event(e)
			}
			r.Close()
			tc.check(t, buf.String())
		})
	}
}

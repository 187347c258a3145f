package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/history"
)

// TestHistoryCmd_Report: history --report draws a deploy from the recording
// its hosts keep, passing over a host whose copy is corrupt or oversize;
// a deploy recorded without one (an older mythex, older agents) says so
// and writes nothing; an id no host knows is bad input.
func TestHistoryCmd_Report(t *testing.T) {
	t0 := historyT0
	good, err := deployrec.Encode(deployrec.Recording{Format: deployrec.FormatVersion, Command: "mythex deploy", CreatedAt: t0,
		Deploys: []deployrec.Deploy{{From: "v1", Version: "v2", Hosts: []string{"web-1", "web-2"}, Start: t0, End: t0.Add(20 * time.Second),
			Events: []deploy.Event{{At: t0.Add(time.Second), Host: "web-1", Phase: deploy.PhaseDrain, Kind: deploy.EventBegin}},
			Result: &deployrec.Result{OK: true, Seconds: 19}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(agentTokenEnv, historyTok)
	gzipGarbage := append([]byte{0x1f, 0x8b, 8, 0}, strings.Repeat("x", 64)...)
	cases := []struct {
		name     string
		t1, t2   []byte // the hosts' timelines; nil: none kept
		args     []string
		wantCode int
		wantErr  string // in stderr
		written  bool
	}{
		{"from the first host that keeps one", good, good, []string{"--id", "d1"}, 0, "", true},
		{"the newest deploy without --id", good, nil, nil, 0, "", true},
		{"a corrupt copy is passed over", []byte("{not json"), good, []string{"--id", "d1"}, 0, "", true},
		{"recorded without a timeline", nil, nil, []string{"--id", "d1"}, 1, "this deploy was recorded without a timeline", false},
		{"every copy corrupt", gzipGarbage, []byte(`{"format":1,"deploys":[]}`), []string{"--id", "d1"}, 1, "host web-2: corrupt recording: no deploy in it", false},
		{"an oversize copy", append([]byte("{"), make([]byte, history.MaxTimeline+10)...), nil, []string{"--id", "d1"}, 1, "recording too large", false},
		{"an id no host knows", good, good, []string{"--id", "d9"}, 2, "no deploy d9 in the history", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "d1.html")
			args := append([]string{"history", "-f", historyFleet(t, historyAgent(t, "web-1", 20*time.Second, nil, c.t1), historyAgent(t, "web-2", 20*time.Second, nil, c.t2)), "--report", out}, c.args...)
			code, stdout, stderr := runCLI(t, args...)
			_, statErr := os.Stat(out)
			if code != c.wantCode || !strings.Contains(stderr, c.wantErr) || (statErr == nil) != c.written {
				t.Fatalf("exit %d, report written %v\nstdout: %s\nstderr: %s\nwant exit %d, report written %v, stderr with %q",
					code, statErr == nil, stdout, stderr, c.wantCode, c.written, c.wantErr)
			}
			if c.written {
				html, _ := os.ReadFile(out)
				if !strings.Contains(string(html), "v1 → v2 deployed to 0 hosts") || !strings.Contains(stdout, "report: "+out) {
					t.Errorf("the report is not the recorded deploy's, or not announced:\n%s", stdout)
				}
			}
		})
	}
}

package probe

import (
	"strings"
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	failed := &CommandResult{Argv: []string{"deploy"}, ExitCode: 3, Error: "exit status 3"}
	okCmd := &CommandResult{Argv: []string{"deploy"}}
	cases := []struct {
		name        string
		r           Report
		maxDropped  int64
		interrupted bool
		grade       Grade
		msg         string
	}{
		{"clean", Report{Requests: 100, OK: 100}, 0, false, Pass, "0 of 100 requests reached nothing"},
		{"one dropped, none allowed", Report{Requests: 100, OK: 99, ReachedNothing: 1}, 0, false, Fail, "1 of 100 requests reached nothing (allowed 0)"},
		{"dropped within allowance", Report{Requests: 100, ReachedNothing: 5}, 5, false, Pass, "5 of 100"},
		{"app errors and drain signals do not fail", Report{Requests: 100, AppErrors: 10, DrainSignals: 10}, 0, false, Pass, "0 of 100"},
		{"command failed", Report{Requests: 100, Command: failed}, 0, false, Fail, "command deploy failed: exit status 3"},
		{"command killed", Report{Requests: 100, Command: &CommandResult{Argv: []string{"deploy"}, ExitCode: -1, Error: "signal: killed"}}, 0, false, Fail, "signal: killed"},
		{"both failures are named", Report{Requests: 100, ReachedNothing: 2, Command: failed}, 0, false, Fail, "2 of 100 requests reached nothing (allowed 0); command deploy failed"},
		{"command ok", Report{Requests: 100, Command: okCmd}, 0, false, Pass, "0 of 100"},
		{"probe errors: incomplete", Report{Requests: 100, ProbeErrors: 3}, 0, false, Incomplete, "3 probe errors"},
		{"unsent: incomplete", Report{Requests: 100, Unsent: 4, MaxInFlight: 16}, 0, false, Incomplete, "4 requests not sent: 16 were in flight"},
		{"interrupted", Report{Requests: 100, Elapsed: 1500 * time.Millisecond}, 0, true, Incomplete, "interrupted after 1.5s"},
		{"dropped beats incomplete", Report{Requests: 100, ReachedNothing: 1, ProbeErrors: 3}, 0, true, Fail, "1 of 100"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(&tc.r, tc.maxDropped, tc.interrupted)
			if v.Grade != tc.grade || !strings.Contains(v.Message, tc.msg) {
				t.Errorf("verdict = %s %q, want %s containing %q", v.Grade, v.Message, tc.grade, tc.msg)
			}
		})
	}
}

package platform

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

func TestRestart_Effective(t *testing.T) {
	tests := []struct {
		name string
		in   Restart
		want Restart
	}{
		{"empty is on-failure with the default budget", Restart{}, Restart{Policy: RestartOnFailure, MaxRetries: DefaultMaxRetries}},
		{"on-failure keeps its budget", Restart{Policy: RestartOnFailure, MaxRetries: 3}, Restart{Policy: RestartOnFailure, MaxRetries: 3}},
		{"always has no budget", Restart{Policy: RestartAlways}, Restart{Policy: RestartAlways}},
		{"no stays no", Restart{Policy: RestartNo}, Restart{Policy: RestartNo}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.Effective(); got != tt.want {
				t.Errorf("Effective() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestConfig_Validate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"ok", Config{Image: "/bin/app"}, ""},
		{"no image", Config{}, "image"},
		{"bad policy", Config{Image: "x", Restart: Restart{Policy: "sometimes"}}, "restart.policy"},
		{"negative retries", Config{Image: "x", Restart: Restart{MaxRetries: -1}}, "restart.max_retries"},
		{"bad port", Config{Image: "x", Port: 70000}, "port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate() = %v, want ErrInvalid", err)
			}
			if got := err.Error(); !contains(got, tt.wantErr) {
				t.Errorf("Validate() = %q, want it to name %q", got, tt.wantErr)
			}
		})
	}
}

func TestConfig_Clone(t *testing.T) {
	c := Config{Image: "a", Args: []string{"x"}, Env: map[string]string{"K": "v"}, Metadata: map[string]string{"m": "1"}}
	d := c.Clone()
	d.Args[0], d.Env["K"], d.Metadata["m"] = "y", "w", "2"
	if c.Args[0] != "x" || c.Env["K"] != "v" || c.Metadata["m"] != "1" {
		t.Fatalf("Clone shares state with the original: %+v", c)
	}
	e := c.WithMetadata(MetadataRelease, "v3")
	if e.Metadata[MetadataRelease] != "v3" || c.Metadata[MetadataRelease] != "" {
		t.Fatalf("WithMetadata: got %v, original %v", e.Metadata, c.Metadata)
	}
	if (Machine{Config: e}).Release() != "v3" {
		t.Fatalf("Machine.Release() did not read the metadata")
	}
}

func TestEvent_At(t *testing.T) {
	ts := time.UnixMilli(1_000_000)
	exited := ts.Add(-time.Second)
	if got := (Event{Timestamp: ts}).At(); !got.Equal(ts) {
		t.Errorf("At() without exit = %v, want %v", got, ts)
	}
	if got := (Event{Timestamp: ts, Exit: &Exit{ExitedAt: exited}}).At(); !got.Equal(exited) {
		t.Errorf("At() with exited_at = %v, want %v", got, exited)
	}
}

func TestTrimEvents(t *testing.T) {
	ev := []Event{{Type: EventExit}, {Type: EventStart}, {Type: EventExit}, {Type: EventStart}}
	if got := TrimEvents(ev, 2); len(got) != 2 || got[0].Type != EventExit || got[1].Type != EventStart {
		t.Errorf("TrimEvents(2) = %+v, want the two newest", got)
	}
	if got := TrimEvents(ev, 0); len(got) != 4 {
		t.Errorf("TrimEvents(0) kept %d, want all 4", len(got))
	}
}

type fakeNetErr struct{}

func (fakeNetErr) Error() string   { return "i/o timeout" }
func (fakeNetErr) Timeout() bool   { return true }
func (fakeNetErr) Temporary() bool { return true }

var _ net.Error = fakeNetErr{}

func TestIsControlPlane(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"rate limited", fmt.Errorf("get m1: %w", ErrRateLimited), true},
		{"unavailable", fmt.Errorf("get m1: %w", ErrUnavailable), true},
		{"timeout", fmt.Errorf("get m1: %w", ErrTimeout), true},
		{"context deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), true},
		{"net error", fmt.Errorf("dial: %w", fakeNetErr{}), true},
		{"not found is about the machine", fmt.Errorf("get m1: %w", ErrNotFound), false},
		{"invalid is about the request", ErrInvalid, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsControlPlane(tt.err); got != tt.want {
				t.Errorf("IsControlPlane(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestState_Transient(t *testing.T) {
	for _, s := range []State{StateStarting, StateStopping, StateRestarting, StateReplacing} {
		if !s.Transient() {
			t.Errorf("%s.Transient() = false", s)
		}
	}
	for _, s := range []State{StateStarted, StateStopped, StateFailed, StateCreated, StateSuspended} {
		if s.Transient() {
			t.Errorf("%s.Transient() = true", s)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

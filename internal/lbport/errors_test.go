package lbport

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
)

type knows bool

func (k knows) Error() string   { return "knows" }
func (k knows) Transient() bool { return bool(k) }

func TestIsTransient(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"throttled", fmt.Errorf("describe: %w", ErrThrottled), true},
		{"refused connection", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{"unauthorized", fmt.Errorf("x: %w", ErrUnauthorized), false},
		{"unknown target group", fmt.Errorf("x: %w", ErrTargetGroupNotFound), false},
		{"invalid target", fmt.Errorf("x: %w", ErrInvalidTarget), false},
		{"unsupported", fmt.Errorf("x: %w", ErrUnsupported), false},
		{"cancelled", fmt.Errorf("x: %w", context.Canceled), false},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), false},
		{"says transient", fmt.Errorf("x: %w", knows(true)), true},
		{"says permanent", fmt.Errorf("x: %w", knows(false)), false},
		{"unexpected answer", &UnexpectedError{Op: "describe", Detail: "garbage"}, false},
		{"throttled beats permanent-looking wrapper", errors.Join(ErrThrottled, knows(false)), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsTransient(tc.err); got != tc.want {
				t.Fatalf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestState_TextRoundTrip(t *testing.T) {
	for s := StateUnused; s <= StateUnavailable; s++ {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back State
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Fatalf("%v round-tripped to %v, %v", s, back, err)
		}
	}
	if _, err := ParseState("InService"); err == nil {
		t.Fatal("ParseState accepted a classic ELB state name")
	}
	if (Target{}).Registered() {
		t.Fatal("the zero Target reads as registered")
	}
}

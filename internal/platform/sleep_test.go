package platform

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// sleepy is a platform of fixed machines that records what it was asked.
type sleepy struct {
	Platform
	ms    []Machine
	calls []string
}

func (s *sleepy) List(context.Context, string) ([]Machine, error) { return s.ms, nil }
func (s *sleepy) Start(_ context.Context, _, id string) error {
	s.calls = append(s.calls, "start "+id)
	return nil
}

type sleepySuspender struct{ *sleepy }

func (s sleepySuspender) Suspend(_ context.Context, _, id string) error {
	s.calls = append(s.calls, "suspend "+id)
	return nil
}

func TestSleep(t *testing.T) {
	machines := []Machine{{ID: "m1", State: StateStarted}, {ID: "m2", State: StateSuspended}, {ID: "m3", State: StateStopped}}
	cases := []struct {
		name      string
		suspender bool
		wake      bool
		n         int
		calls     []string
		err       error
	}{
		{"sleep", true, false, 1, []string{"suspend m1"}, nil},
		{"wake", true, true, 1, []string{"start m2"}, nil},
		{"wake without suspend support", false, true, 1, []string{"start m2"}, nil},
		{"sleep without suspend support", false, false, 0, nil, ErrCannotSleep},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &sleepy{ms: machines}
			var p Platform = s
			if tc.suspender {
				p = sleepySuspender{s}
			}
			n, err := Sleep(context.Background(), p, "api", tc.wake)
			if n != tc.n || !errors.Is(err, tc.err) || !slices.Equal(s.calls, tc.calls) {
				t.Errorf("Sleep = %d, %v, calls %v; want %d, %v, %v", n, err, s.calls, tc.n, tc.err, tc.calls)
			}
		})
	}
}

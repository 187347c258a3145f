package timing

import (
	"math"
	"testing"
	"time"
)

func TestFmtDur(t *testing.T) {
	cases := []struct {
		name string
		in   time.Duration
		want string
	}{
		{"zero", 0, "0s"},
		{"whole seconds stay seconds", 300 * time.Second, "300s"},
		{"an hour in seconds, as the ALB writes it", time.Hour, "3600s"},
		{"half seconds", 6500 * time.Millisecond, "6.5s"},
		{"milliseconds", 250 * time.Millisecond, "0.25s"},
		{"one millisecond", time.Millisecond, "0.001s"},
		{"below a millisecond keeps every digit", 12*time.Second + 1, "12.000000001s"},
		{"negative", -57 * time.Second, "-57s"},
		{"most negative", math.MinInt64, time.Duration(math.MinInt64).String()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := fmtDur(tc.in)
			if got != tc.want {
				t.Errorf("fmtDur(%d) = %q, want %q", int64(tc.in), got, tc.want)
			}
			if back, err := time.ParseDuration(got); err != nil || back != tc.in {
				t.Errorf("%q parses back as %v (%v), want %v", got, back, err, tc.in)
			}
		})
	}
}

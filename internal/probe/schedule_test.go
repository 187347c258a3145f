package probe

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestNewSchedule_Total(t *testing.T) {
	cases := []struct {
		name string
		rate float64
		d    time.Duration
		want int64
	}{
		{"500/s for 30s", 500, 30 * time.Second, 15000},
		{"3/s for 1s", 3, time.Second, 3},
		{"1/s for 1s holds only i=0", 1, time.Second, 1},
		{"1/s for 1.001s holds i=0,1", 1, time.Second + time.Millisecond, 2},
		{"0.5/s for 2.5s: due at 0 and 2s", 0.5, 2500 * time.Millisecond, 2},
		{"5000/s for 20s", 5000, 20 * time.Second, 100000},
		{"7/s for 3s", 7, 3 * time.Second, 21},
		{"no duration means no end", 10, 0, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSchedule(t0, tc.rate, tc.d)
			if s.total != tc.want {
				t.Fatalf("total = %d, want %d", s.total, tc.want)
			}
			if tc.want > 0 {
				if last := s.offset(tc.want - 1); last >= tc.d {
					t.Errorf("last request due at %v, not before the end %v", last, tc.d)
				}
				if after := s.offset(tc.want); after < tc.d {
					t.Errorf("request %d due at %v, before the end %v, is missing", tc.want, after, tc.d)
				}
			}
		})
	}
}

func TestSchedule_Due(t *testing.T) {
	s := newSchedule(t0, 3, 0)
	cases := []struct {
		i    int64
		want time.Duration
	}{
		{0, 0},
		{1, 333333333},
		{2, 666666666},
		{3, time.Second},
		{3000, 1000 * time.Second}, // no drift after many periods
		{3_000_000, 1_000_000 * time.Second},
	}
	for _, tc := range cases {
		if got := s.due(tc.i).Sub(t0); got != tc.want {
			t.Errorf("due(%d) = start+%v, want start+%v", tc.i, got, tc.want)
		}
	}
}

func TestSchedule_DueBy(t *testing.T) {
	s := newSchedule(t0, 500, 0) // period 2 ms
	bounded := newSchedule(t0, 500, time.Second)
	cases := []struct {
		name string
		s    schedule
		at   time.Duration
		want int64
	}{
		{"before start", s, -time.Millisecond, 0},
		{"at start request 0 is due", s, 0, 1},
		{"just before request 1", s, 2*time.Millisecond - 1, 1},
		{"exactly at request 1", s, 2 * time.Millisecond, 2},
		{"after 1s", s, time.Second, 501},
		{"late by a long way: all of them are due", s, 10 * time.Second, 5001},
		{"capped at the schedule's total", bounded, 10 * time.Second, 500},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.dueBy(t0.Add(tc.at)); got != tc.want {
				t.Errorf("dueBy(start+%v) = %d, want %d", tc.at, got, tc.want)
			}
		})
	}
}

func TestSchedule_Second(t *testing.T) {
	s := newSchedule(t0, 4, 0)
	for i, want := range []int{0, 0, 0, 0, 1, 1, 1, 1, 2} {
		if got := s.second(int64(i)); got != want {
			t.Errorf("second(%d) = %d, want %d", i, got, want)
		}
	}
}

func TestSchedule_Ended(t *testing.T) {
	s := newSchedule(t0, 10, time.Second)
	if s.ended(9) || !s.ended(10) {
		t.Errorf("ended(9)=%v ended(10)=%v, want false true", s.ended(9), s.ended(10))
	}
	if newSchedule(t0, 10, 0).ended(1 << 40) {
		t.Error("a schedule without duration ended")
	}
}

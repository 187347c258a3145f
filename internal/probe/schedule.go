package probe

import (
	"math"
	"time"
)

// schedule is the open-loop send schedule: request i is due at start + i/rate,
// whatever happened to earlier requests. Due times are computed from i, never
// accumulated, so rounding never drifts.
type schedule struct {
	start time.Time
	rate  float64 // requests per second, > 0
	// total is the number of requests in the schedule; -1 for no end.
	total int64
}

// newSchedule returns the schedule of rate requests per second from start for
// duration d (0: no end). With a duration it holds every i with i/rate < d.
func newSchedule(start time.Time, rate float64, d time.Duration) schedule {
	s := schedule{start: start, rate: rate, total: -1}
	if d > 0 {
		n := int64(math.Ceil(d.Seconds() * rate))
		for n > 0 && s.offset(n-1) >= d {
			n--
		}
		for s.offset(n) < d {
			n++
		}
		s.total = n
	}
	return s
}

// offset is how long after start request i is due.
func (s schedule) offset(i int64) time.Duration {
	return time.Duration(float64(i) * float64(time.Second) / s.rate)
}

// due is when request i is due.
func (s schedule) due(i int64) time.Time { return s.start.Add(s.offset(i)) }

// dueBy returns how many requests are due at or before now (requests
// 0..n-1), capped at the schedule's total.
func (s schedule) dueBy(now time.Time) int64 {
	el := now.Sub(s.start)
	if el < 0 {
		return 0
	}
	n := int64(el.Seconds()*s.rate) + 1
	for n > 0 && s.offset(n-1) > el {
		n--
	}
	for s.offset(n) <= el {
		n++
	}
	if s.total >= 0 && n > s.total {
		n = s.total
	}
	return n
}

// ended reports whether every request of the schedule has been dispatched
// once next requests have been.
func (s schedule) ended(next int64) bool { return s.total >= 0 && next >= s.total }

// second is the 0-based second of the run that request i is due in; results
// are bucketed by it.
func (s schedule) second(i int64) int { return int(s.offset(i) / time.Second) }

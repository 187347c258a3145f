package timing

import (
	"strconv"
	"time"
)

// fmtDur writes d the way mythex.yml and the ALB documentation write durations:
// in seconds ("12s", "300s", "6.5s", "0.25s"), falling back to Go's notation
// only below a millisecond ("12.000000001s"). The result always parses with
// time.ParseDuration.
func fmtDur(d time.Duration) string {
	if d < 0 {
		if d == -d { // math.MinInt64 has no positive counterpart
			return d.String()
		}
		return "-" + fmtDur(-d)
	}
	switch {
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	}
	return d.String()
}

package testbin

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cpuTimes is the machine's CPU time so far, in the kernel's ticks: idle
// (idle and iowait) and total.
type cpuTimes struct{ idle, total uint64 }

// readProcStat reads the first line of Linux's /proc/stat ("cpu  user nice
// system idle iowait irq softirq steal ..."). Errors: no /proc/stat (other
// systems), or a line it cannot parse.
func readProcStat() (cpuTimes, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return cpuTimes{}, fmt.Errorf("read /proc/stat: %w", err)
	}
	return parseCPULine(line)
}

// parseCPULine parses /proc/stat's aggregate "cpu" line.
func parseCPULine(line string) (cpuTimes, error) {
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("/proc/stat: want a cpu line, got %q", line)
	}
	var t cpuTimes
	for i, f := range fields[1:] {
		if i >= 8 { // guest times are already in user and nice
			break
		}
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("/proc/stat field %d %q: %w", i+1, f, err)
		}
		t.total += v
		if i == 3 || i == 4 { // idle, iowait
			t.idle += v
		}
	}
	return t, nil
}

// cpuSampler tells how idle the machine's CPUs were over about the last
// second, reading them at most every sampleEvery.
type cpuSampler struct {
	read func() (cpuTimes, error)

	mu       sync.Mutex
	prev     cpuTimes // at prevAt
	prevAt   time.Time
	lastIdle float64
	known    bool
}

// sampleEvery is how often cpuSampler reads the CPU times again.
const sampleEvery = time.Second

// staleAfter is how old a reading may be and still start the next window.
const staleAfter = 3 * time.Second

// idle returns the idle fraction (0–1) since the previous reading, one to
// three seconds ago; without one (the first call, or a reading gone stale)
// it reads twice, 250 ms apart. known is false when the times cannot be read.
func (s *cpuSampler) idle() (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if !s.prevAt.IsZero() && now.Sub(s.prevAt) > staleAfter {
		s.prevAt = time.Time{} // idle since then says little about now
	}
	if s.prevAt.IsZero() {
		t, err := s.read()
		if err != nil {
			return 0, false
		}
		s.prev, s.prevAt = t, now
		time.Sleep(250 * time.Millisecond) // the first window
		now = time.Now()
	} else if now.Sub(s.prevAt) < sampleEvery {
		return s.lastIdle, s.known
	}
	t, err := s.read()
	if err != nil {
		return 0, false
	}
	if d := t.total - s.prev.total; d > 0 && t.total >= s.prev.total {
		s.lastIdle, s.known = float64(t.idle-s.prev.idle)/float64(d), true
	}
	s.prev, s.prevAt = t, now
	return s.lastIdle, s.known
}

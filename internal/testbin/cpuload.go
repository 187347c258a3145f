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

// cpuTimes is one reading of the machine's CPU: time so far in the kernel's
// ticks, idle (idle and iowait) and total, and — where the kernel has pressure
// stall information (Linux ≥ 4.20, /proc/pressure/cpu) — how long, in all,
// some runnable task waited for a CPU.
type cpuTimes struct {
	idle, total  uint64
	stalled      time.Duration
	stallUnknown bool
}

// readCPU reads Linux's /proc/stat (its first line: "cpu  user nice system
// idle iowait irq softirq steal ...") and /proc/pressure/cpu ("some avg10=…
// total=<µs>"). Errors: no /proc/stat (other systems), or a line it cannot
// parse; pressure it cannot read is left unknown.
func readCPU() (cpuTimes, error) {
	line, err := firstLine("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	t, err := parseCPULine(line)
	if err != nil {
		return cpuTimes{}, err
	}
	t.stallUnknown = true
	if l, err := firstLine("/proc/pressure/cpu"); err == nil {
		if d, err := parsePressureLine(l); err == nil {
			t.stalled, t.stallUnknown = d, false
		}
	}
	return t, nil
}

func firstLine(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return line, nil
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

// parsePressureLine parses the "some" line of /proc/pressure/cpu: the total
// time, in microseconds, during which at least one runnable task waited.
func parsePressureLine(line string) (time.Duration, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] != "some" {
		return 0, fmt.Errorf("/proc/pressure/cpu: want a some line, got %q", line)
	}
	for _, f := range fields[1:] {
		if v, ok := strings.CutPrefix(f, "total="); ok {
			us, err := strconv.ParseUint(v, 10, 63)
			if err != nil {
				return 0, fmt.Errorf("/proc/pressure/cpu total %q: %w", v, err)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	return 0, fmt.Errorf("/proc/pressure/cpu: no total in %q", line)
}

// cpuLoad is how busy the machine was over a window: the CPUs' idle
// fraction (0–1) and the fraction of the time some runnable task waited for
// a CPU (pressure, 0–1; only when pressureKnown).
type cpuLoad struct {
	idle, pressure float64
	pressureKnown  bool
}

// cpuSample is a reading and when it was taken.
type cpuSample struct {
	at time.Time
	t  cpuTimes
}

// cpuSampler tells how busy the machine was over the last window, from
// readings taken at most every sampleEvery while someone asks. A busy
// machine is not busy all the time: `go test` starts its compiles and links
// one after another, and a second between two of them looks idle, so one
// second says little about the next ten — the load is judged over the
// whole window, and not at all until the readings span most of it.
type cpuSampler struct {
	read   func() (cpuTimes, error)
	now    func() time.Time
	window time.Duration

	mu      sync.Mutex
	samples []cpuSample // oldest first; the first is at least window old once warm
}

// sampleEvery is how often cpuSampler reads the CPU again while asked.
const sampleEvery = 500 * time.Millisecond

// staleAfter is the longest gap between readings that still makes one
// window: past it nobody asked for a while, and the readings start over.
const staleAfter = 3 * time.Second

// load returns the machine's load over about the last window. ready is false
// while the readings span less than 80 % of the window (they started over, or
// this is the first call); known is false when the CPU cannot be read (not
// Linux), when the caller must decide without it.
func (s *cpuSampler) load() (l cpuLoad, ready, known bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if n := len(s.samples); n > 0 && now.Sub(s.samples[n-1].at) > staleAfter {
		s.samples = s.samples[:0]
	}
	if n := len(s.samples); n == 0 || now.Sub(s.samples[n-1].at) >= sampleEvery {
		t, err := s.read()
		if err != nil {
			return cpuLoad{}, false, false
		}
		s.samples = append(s.samples, cpuSample{at: now, t: t})
	}
	// Keep one reading at least window old as the base, none older.
	for len(s.samples) > 2 && now.Sub(s.samples[1].at) >= s.window {
		s.samples = s.samples[1:]
	}
	base, last := s.samples[0], s.samples[len(s.samples)-1]
	span := last.at.Sub(base.at)
	if span < s.window*8/10 || last.t.total <= base.t.total {
		return cpuLoad{}, false, true
	}
	l.idle = float64(last.t.idle-base.t.idle) / float64(last.t.total-base.t.total)
	if !base.t.stallUnknown && !last.t.stallUnknown && last.t.stalled >= base.t.stalled {
		l.pressure, l.pressureKnown = float64(last.t.stalled-base.t.stalled)/float64(span), true
	}
	return l, true, true
}

package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mythex/mythex/internal/runtime"
)

// adoptPollInterval is how often an adopted process is looked at when the
// system has no pidfd, and how often the pidfd wait wakes to notice Close.
const adoptPollInterval = 500 * time.Millisecond

// load reads the instance records and adopts the instances still running.
func (p *Process) load() error {
	recs, bad, err := readRecords(p.opts.StateDir)
	if err != nil {
		return fmt.Errorf("process runtime: %w", err)
	}
	for _, err := range bad {
		p.log.Error("process runtime: skipping an unreadable instance record", "err", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, rec := range recs {
		inst := &instance{rec: rec}
		p.instances[rec.ID] = inst
		if rec.State != runtime.StateRunning {
			continue
		}
		if alive(rec.PID, rec.StartTicks) {
			p.adopt(inst)
			continue
		}
		inst.rec.State = runtime.StateExited
		inst.rec.ExitCode = -1
		inst.rec.Signal = ""
		inst.rec.FinishedAt = p.clock.Now()
		inst.rec.Detail = "exited while no agent was running; exit code and time unknown"
		p.log.Warn("process runtime: instance exited while no agent ran", "id", rec.ID, "pid", rec.PID)
		if err := writeRecord(p.opts.StateDir, inst.rec); err != nil {
			return fmt.Errorf("process runtime: %w", err)
		}
	}
	p.adoptOrStopMarked()
	return nil
}

// alive reports whether pid is running and is the process that started at
// ticks (not another that reused the pid).
func alive(pid int, ticks uint64) bool {
	if pid <= 0 || ticks == 0 {
		return false
	}
	got, err := procStartTicks(pid)
	if err != nil || got != ticks {
		return false
	}
	// A zombie has exited; it only waits to be reaped.
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			return i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
		}
	}
	return false
}

// adopt takes over an instance a previous agent started: it reattaches the
// log pipe, watches for the exit and checks health. p.mu must be held.
func (p *Process) adopt(inst *instance) {
	rec := inst.rec
	rn := &run{pid: rec.PID, startedAt: rec.StartedAt, done: make(chan struct{}), logDone: make(chan struct{})}
	rn.logR = reopenLogPipe(rec.PID, rec.PipeInode)
	inst.run = rn
	inst.health = runtime.InitialHealth(rec.Spec.Healthcheck)
	inst.rec.Detail = "adopted after an agent restart: its exit code will be unknown"
	if rn.logR == nil {
		inst.rec.Detail = "adopted after an agent restart: its exit code will be unknown and its output is no longer logged"
	}
	if err := writeRecord(p.opts.StateDir, inst.rec); err != nil {
		p.log.Error("process runtime: cannot write instance record", "id", rec.ID, "err", err)
	}
	p.log.Info("process runtime: adopted", "id", rec.ID, "pid", rec.PID, "logging", rn.logR != nil)
	logw := p.serviceLog(rec.Spec.Name)
	fmt.Fprintf(logw, "mythex: %s %s adopted by a new agent: pid %d\n", p.clock.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"), rec.ID, rec.PID)
	p.goBackground(func() { copyLog(rn, logw) })
	p.goBackground(func() {
		if waitExit(p.ctx, rec.PID, rec.StartTicks) {
			p.finish(inst, rn, -1, "")
		}
	})
	p.startHealth(inst, rn)
}

// reopenLogPipe opens the read end of pid's log pipe through its fd 3, if fd
// 3 is still the pipe with inode ino; nil otherwise.
func reopenLogPipe(pid int, ino uint64) *os.File {
	if ino == 0 {
		return nil
	}
	fd := "/proc/" + strconv.Itoa(pid) + "/fd/3"
	if target, err := os.Readlink(fd); err != nil || target != "pipe:["+strconv.FormatUint(ino, 10)+"]" {
		return nil
	}
	f, err := os.OpenFile(fd, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	return f
}

// waitExit blocks until the (non-child) process pid exits, returning true,
// or until ctx ends, returning false. It waits on a pidfd, or polls where
// there is none.
func waitExit(ctx context.Context, pid int, ticks uint64) bool {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return true
		}
		return pollExit(ctx, pid, ticks)
	}
	defer unix.Close(pidfd)
	// The pid may have been reused between alive() and PidfdOpen.
	if !alive(pid, ticks) {
		return true
	}
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for ctx.Err() == nil {
		n, err := unix.Poll(fds, int(adoptPollInterval/time.Millisecond))
		if err != nil && !errors.Is(err, unix.EINTR) {
			return pollExit(ctx, pid, ticks)
		}
		if n > 0 {
			return true
		}
	}
	return false
}

func pollExit(ctx context.Context, pid int, ticks uint64) bool {
	t := time.NewTicker(adoptPollInterval)
	defer t.Stop()
	for {
		if !alive(pid, ticks) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

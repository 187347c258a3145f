package process

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/mythex/mythex/internal/runtime"
)

// pipeSize is the log pipe's buffer, requested with F_SETPIPE_SZ: how much a
// service may write while no agent reads before its writes block.
const pipeSize = 1 << 20

// spawn starts inst's process and its companions (log copy, exit wait,
// health loop). p.mu must be held.
func (p *Process) spawn(inst *instance) error {
	spec := inst.rec.Spec
	if err := p.checkPort(spec.Name, spec.Process.Port); err != nil {
		return err
	}
	if fi, err := os.Stat(spec.Process.WorkingDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("working directory %s (x-mythex.working_dir) is not a directory on this host: %w", spec.Process.WorkingDir, cmp.Or(err, error(syscall.ENOTDIR)))
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	growPipe(w)
	// The child's copy of the read end is a second open file description of
	// the pipe: exec puts the files it passes in blocking mode, and r must
	// stay non-blocking so that Close can interrupt the log copy.
	childR, err := reopenSelf(r)
	if err != nil {
		r.Close()
		w.Close()
		return fmt.Errorf("log pipe: %w", err)
	}
	defer childR.Close()
	exe := spec.Process.Executable
	cmd := &exec.Cmd{
		Path:   exe,
		Args:   append([]string{exe}, spec.Command...),
		Env:    append(environ(spec.Environment), EnvRuntimeDir+"="+p.opts.StateDir, EnvInstance+"="+inst.rec.ID),
		Dir:    spec.Process.WorkingDir,
		Stdout: w,
		Stderr: w,
		// fd 3: the read end of its own log pipe, so that its writes never
		// hit EPIPE/SIGPIPE while no agent reads (see the package doc).
		ExtraFiles:  []*os.File{childR},
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return fmt.Errorf("exec %s (x-mythex.executable): %w", exe, err)
	}
	w.Close()
	pid := cmd.Process.Pid
	ticks, err := procStartTicks(pid)
	if err != nil {
		p.log.Warn("process runtime: cannot read process start time; it will not be adopted after an agent restart", "id", inst.rec.ID, "pid", pid, "err", err)
	}
	now := p.clock.Now()
	rec := inst.rec
	rec.State = runtime.StateRunning
	rec.PID = pid
	rec.StartTicks = ticks
	rec.PipeInode = inode(r)
	rec.StartedAt = now
	rec.Detail = ""
	// An instance nobody can find again after an agent restart must not run:
	// it would hold its port as an orphan. No record, no start.
	if err := writeRecord(p.opts.StateDir, rec); err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Wait()
		r.Close()
		p.log.Error("process runtime: cannot write instance record; stopped what was started", "id", inst.rec.ID, "pid", pid, "err", err)
		return fmt.Errorf("record the instance (so that it can be found after an agent restart): %w; the process was stopped", err)
	}
	rn := &run{pid: pid, startedAt: now, done: make(chan struct{}), logR: r, logDone: make(chan struct{})}
	inst.rec = rec
	inst.run = rn
	inst.stop = nil
	inst.health = runtime.InitialHealth(spec.Healthcheck)
	logw := p.serviceLog(spec.Name)
	fmt.Fprintf(logw, "mythex: %s %s started: pid %d, version %s, restart count %d\n",
		now.UTC().Format("2006-01-02T15:04:05.000Z07:00"), inst.rec.ID, pid, spec.Version, inst.rec.RestartCount)
	p.log.Info("process runtime: started", "id", inst.rec.ID, "pid", pid, "version", spec.Version)
	p.goBackground(func() { copyLog(rn, logw) })
	p.goDetached(func() {
		_ = cmd.Wait()
		code, sig := exitStatus(cmd.ProcessState)
		p.finish(inst, rn, code, sig)
	})
	p.startHealth(inst, rn)
	return nil
}

// finish records that rn has exited with code (and sig): it kills what is
// left of its process group (as a container's processes end with it), lets
// the log copy drain, and sets the instance stopped (if a stop was asked) or
// exited.
func (p *Process) finish(inst *instance, rn *run, code int, sig string) {
	_ = syscall.Kill(-rn.pid, syscall.SIGKILL)
	select {
	case <-rn.logDone:
	case <-p.clock.After(logDrainWait):
		rn.closeLog()
	}
	p.mu.Lock()
	now := p.clock.Now()
	if rn.cancelHealth != nil {
		rn.cancelHealth()
	}
	if inst.run == rn {
		inst.run = nil
		inst.health = runtime.Health{Status: runtime.HealthNone}
		inst.rec.FinishedAt = now
		inst.rec.ExitCode = code
		inst.rec.Signal = sig
		inst.rec.State = runtime.StateExited
		if inst.stop != nil {
			inst.rec.State = runtime.StateStopped
		}
		if !p.closed {
			if err := writeRecord(p.opts.StateDir, inst.rec); err != nil {
				p.log.Error("process runtime: cannot write instance record", "id", inst.rec.ID, "err", err)
			}
			fmt.Fprintf(p.serviceLog(inst.rec.Spec.Name), "mythex: %s %s %s: exit code %d%s\n",
				now.UTC().Format("2006-01-02T15:04:05.000Z07:00"), inst.rec.ID, inst.rec.State, code, sigNote(sig))
			p.log.Info("process runtime: "+string(inst.rec.State), "id", inst.rec.ID, "exit_code", code, "signal", sig)
		}
	}
	p.mu.Unlock()
	close(rn.done)
}

func sigNote(sig string) string {
	if sig == "" {
		return ""
	}
	return " (" + sig + ")"
}

// copyLog copies the service's output into its log until EOF or Close.
func copyLog(rn *run, w io.Writer) {
	defer close(rn.logDone)
	if rn.logR == nil {
		return
	}
	_, _ = io.Copy(w, rn.logR)
	rn.closeLog()
}

// serviceLog returns the rotating log of service name. p.mu must be held.
func (p *Process) serviceLog(name string) *lumberjack.Logger {
	l, ok := p.logs[name]
	if !ok {
		l = &lumberjack.Logger{
			Filename:   filepath.Join(p.opts.LogDir, name+".log"),
			MaxSize:    p.opts.LogMaxSizeMB,
			MaxBackups: p.opts.LogMaxBackups,
		}
		p.logs[name] = l
	}
	return l
}

// LogPath is the path of service name's current log file; rotated files sit
// beside it as <name>-<timestamp>.log.
func (p *Process) LogPath(name string) string {
	return filepath.Join(p.opts.LogDir, name+".log")
}

// environ turns the definition's environment into a sorted KEY=VALUE list,
// adding the agent's PATH when the definition sets none (so a service can
// exec its helpers). Nothing else of the agent's environment leaks in.
func environ(env map[string]string) []string {
	out := make([]string, 0, len(env)+1)
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	if _, ok := env["PATH"]; !ok {
		if path, ok := os.LookupEnv("PATH"); ok {
			out = append(out, "PATH="+path)
		}
	}
	slices.Sort(out)
	return out
}

// exitStatus reports how a process ended, as Docker does: the exit status,
// or 128+n and the signal's name when signal n killed it.
func exitStatus(ps *os.ProcessState) (int, string) {
	if ps == nil {
		return -1, ""
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok {
		return ps.ExitCode(), ""
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal()), unix.SignalName(ws.Signal())
	}
	return ws.ExitStatus(), ""
}

// reopenSelf opens f's pipe again through /proc/self/fd, giving a new open
// file description of the same pipe.
func reopenSelf(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var path string
	if err := rc.Control(func(fd uintptr) { path = "/proc/self/fd/" + strconv.Itoa(int(fd)) }); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// growPipe asks for a pipeSize buffer on w's pipe; best effort (the system's
// pipe-max-size may be lower).
func growPipe(w *os.File) {
	rc, err := w.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize)
	})
}

func inode(f *os.File) uint64 {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// procStartTicks reads a process's start time (field 22 of
// /proc/<pid>/stat, clock ticks since boot).
func procStartTicks(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); starttime is field 22.
	const startTime = 22 - 3
	if len(fields) <= startTime {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	return strconv.ParseUint(fields[startTime], 10, 64)
}

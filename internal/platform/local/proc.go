package local

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one running process of a machine, in its own process group so the
// supervisor can signal everything it spawned.
type proc struct {
	cmd    *exec.Cmd
	pid    int
	exited chan procExit // receives once, when the process ends
}

// procExit is how a process ended.
type procExit struct {
	code   int // -1 when killed by a signal
	signal int // 0 when it exited on its own
}

// spawn starts argv with env, stdout and stderr appended to logFile. It
// never goes through a shell.
func spawn(argv []string, env []string, logFile *os.File) (*proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, exited: make(chan procExit, 1)}
	go func() {
		err := cmd.Wait()
		p.exited <- exitOf(cmd.ProcessState, err)
	}()
	return p, nil
}

func exitOf(ps *os.ProcessState, err error) procExit {
	if ps == nil {
		return procExit{code: 127}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return procExit{code: -1, signal: int(ws.Signal())}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) || err == nil {
		return procExit{code: ps.ExitCode()}
	}
	return procExit{code: 127}
}

// signal sends sig to the process's group (and the process itself, in case
// it left the group).
func (p *proc) signal(sig syscall.Signal) {
	_ = syscall.Kill(-p.pid, sig)
	_ = syscall.Kill(p.pid, sig)
}

// stopWait bounds how long suspend waits for the kernel to stop a process.
const stopWait = time.Second

// waitStopped waits, up to stopWait, until the kernel reports the process
// stopped (state T in /proc/PID/stat). SIGSTOP is delivered asynchronously:
// kill(2) returns before every thread has stopped, and a thread mid-request
// could still answer; a suspend is reported once the machine really sleeps,
// as a Fly machine reads suspended only once it is. Without /proc it returns
// at once. It reports whether the process was seen stopped.
func (p *proc) waitStopped() bool {
	path := "/proc/" + strconv.Itoa(p.pid) + "/stat"
	deadline := time.Now().Add(stopWait)
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		// The state is the field after the command, which is in parentheses
		// and may itself hold spaces or parentheses.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// killStale kills the process group of pid if a process with that pid still
// runs: a supervisor that crashed left it behind.
func killStale(pid int) {
	if pid <= 0 {
		return
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return
	}
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// baseEnv is the part of the supervisor's environment a machine inherits:
// what a program needs to run, nothing of mythex's own configuration.
func baseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ", "USER":
			out = append(out, kv)
		}
	}
	return out
}

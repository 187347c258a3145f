package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mythex/mythex/internal/runtime"
)

// The marker in every service's environment: which runtime (state
// directory) started it, and as which instance. With the process group
// (every service leads its own), it lets an agent find what it started even
// when the instance records are missing or stale.
const (
	// EnvRuntimeDir is the absolute state directory of the runtime that
	// started the process.
	EnvRuntimeDir = "MYTHEX_RUNTIME_DIR"
	// EnvInstance is the instance ID ("<name>-<spec hash prefix>").
	EnvInstance = "MYTHEX_INSTANCE"
)

// orphanGrace is how long an orphan (a process of ours no record explains)
// gets between SIGTERM and SIGKILL: Docker's default stop timeout, as its
// own stop_grace_period is not known without its record.
const orphanGrace = 10 * time.Second

// markedProcess is a process group leader carrying this runtime's marker.
type markedProcess struct {
	pid   int
	ticks uint64
	id    string
	cmd   string
}

// findMarked lists the process group leaders whose environment carries
// EnvRuntimeDir=dir, by scanning /proc. Processes it may not read (another
// user's) are skipped: they cannot be ours.
func findMarked(dir string) []markedProcess {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte(EnvRuntimeDir + "=" + dir)
	var out []markedProcess
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		var id string
		found := false
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				found = true
			}
			if v, ok := bytes.CutPrefix(kv, []byte(EnvInstance+"=")); ok {
				id = string(v)
			}
		}
		if !found || id == "" {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
			continue // a child of the service: its group leader stands for it
		}
		ticks, err := procStartTicks(pid)
		if err != nil || !alive(pid, ticks) {
			continue
		}
		out = append(out, markedProcess{pid: pid, ticks: ticks, id: id, cmd: runtime.Cmdline(pid)})
	}
	return out
}

// adoptOrStopMarked handles what findMarked finds that the records did not
// explain: a process of an instance with a record is adopted (its record was
// stale: a write failed, or the agent died before it); one without a record,
// or of an instance already running, is stopped — SIGTERM to its group,
// SIGKILL after orphanGrace — so that it never holds a port the service
// needs. p.mu must be held.
func (p *Process) adoptOrStopMarked() {
	for _, m := range findMarked(p.opts.StateDir) {
		inst, ok := p.instances[m.id]
		if ok && inst.run != nil && inst.rec.PID == m.pid {
			continue // adopted from its record
		}
		if ok && inst.run == nil && !p.otherRunning(inst) {
			inst.rec.PID, inst.rec.StartTicks = m.pid, m.ticks
			inst.rec.State = runtime.StateRunning
			inst.rec.PipeInode = pipeInodeOf(m.pid)
			inst.rec.StartedAt = p.clock.Now()
			p.log.Warn("process runtime: found a running instance its record called stopped; adopting it", "id", m.id, "pid", m.pid)
			p.adopt(inst)
			continue
		}
		why := "no record explains it"
		if ok {
			why = "another process of the same service runs"
		}
		p.log.Warn("process runtime: stopping an orphan this runtime started", "id", m.id, "pid", m.pid, "command", m.cmd, "why", why)
		stopGroup(m.pid, m.ticks, orphanGrace)
	}
}

// otherRunning reports whether another instance of inst's service runs;
// p.mu must be held.
func (p *Process) otherRunning(inst *instance) bool {
	for _, o := range p.instances {
		if o != inst && o.run != nil && o.rec.Spec.Name == inst.rec.Spec.Name {
			return true
		}
	}
	return false
}

// stopGroup stops the process group led by pid (started at ticks): SIGTERM,
// then SIGKILL after grace, and waits until the leader is gone.
func stopGroup(pid int, ticks uint64, grace time.Duration) {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for alive(pid, ticks) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			deadline = time.Now().Add(time.Hour)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pipeInodeOf is the inode of pid's fd 3 when it is a pipe (its log pipe);
// 0 otherwise.
func pipeInodeOf(pid int) uint64 {
	target, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/3")
	if err != nil {
		return 0
	}
	s, ok := strings.CutPrefix(target, "pipe:[")
	if !ok {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64)
	return n
}

// ErrPortHeld: the port a service listens on (x-mythex.port) is held by a
// process that is not one of this runtime's services; the error names it.
// Nothing was started.
var ErrPortHeld = errors.New("port held by another process")

// checkPort makes sure the service's port is free before it starts: an
// orphan of this runtime holding it is stopped; anyone else holding it is
// an ErrPortHeld naming the holder, and nothing is started (a service that
// would only exit with "address already in use" is never started, so the
// watchdog never loops on it). p.mu must be held.
func (p *Process) checkPort(name string, port int) error {
	if port <= 0 {
		return nil
	}
	h, held := runtime.PortHolder(port)
	// A listener nobody owns is usually a socket being closed by a process
	// that is exiting (an orphan just stopped): look again for a moment
	// before calling it someone else's.
	for i := 0; held && h.PID == 0 && i < 20; i++ {
		time.Sleep(50 * time.Millisecond)
		h, held = runtime.PortHolder(port)
	}
	if !held {
		return nil
	}
	if h.PID > 0 {
		// The group leader is what this runtime would have started.
		if pgid, err := syscall.Getpgid(h.PID); err == nil {
			if ms := findMarkedOne(pgid, p.opts.StateDir); len(ms) == 1 {
				m := ms[0]
				if inst, ok := p.instances[m.id]; ok && inst.run != nil && inst.rec.PID == m.pid {
					return nil // one of ours that runs: Start's conflict rules apply
				}
				p.log.Warn("process runtime: an orphan of this runtime holds the port; stopping it", "service", name, "port", port, "pid", m.pid, "command", m.cmd)
				stopGroup(m.pid, m.ticks, orphanGrace)
				return nil
			}
		}
	}
	return fmt.Errorf("%w: port %d (x-mythex.port of %s) is held by %s, not by a service of this agent; stop it or change the port",
		ErrPortHeld, port, name, h)
}

// findMarkedOne returns pid as a markedProcess if it carries the marker of
// runtimeDir.
func findMarkedOne(pid int, runtimeDir string) []markedProcess {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || !bytes.Contains(env, []byte(EnvRuntimeDir+"="+runtimeDir+"\x00")) {
		return nil
	}
	var id string
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(EnvInstance+"=")); ok {
			id = string(v)
		}
	}
	ticks, err := procStartTicks(pid)
	if err != nil {
		return nil
	}
	return []markedProcess{{pid: pid, ticks: ticks, id: id, cmd: runtime.Cmdline(pid)}}
}

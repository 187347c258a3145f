package process

import (
	"syscall"
	"time"

	"github.com/mythex/mythex/internal/runtime"
)

// logDrainWait bounds how long an exit waits for the last of the service's
// output to reach its log.
const logDrainWait = 2 * time.Second

// runStop stops rn as `docker stop` stops a container: SIGTERM to the process
// group, SIGKILL to the group if it has not exited when grace runs out. It
// publishes the result on op and clears the instance's stop.
func (p *Process) runStop(inst *instance, rn *run, op *stopOp, grace time.Duration) {
	start := p.clock.Now()
	p.log.Info("process runtime: stopping", "id", inst.rec.ID, "pid", rn.pid, "grace", grace)
	signalGroup(rn.pid, syscall.SIGTERM)
	timer := p.clock.NewTimer(grace)
	defer timer.Stop()
	killed := false
	select {
	case <-rn.done:
	case <-timer.Chan():
		killed = true
		p.log.Warn("process runtime: grace period over, killing", "id", inst.rec.ID, "pid", rn.pid, "grace", grace)
		signalGroup(rn.pid, syscall.SIGKILL)
		select {
		case <-rn.done:
		case <-p.ctx.Done():
		}
	case <-p.ctx.Done():
	}
	p.mu.Lock()
	op.result = runtime.StopResult{
		Name:       inst.rec.Spec.Name,
		ID:         inst.rec.ID,
		WasRunning: true,
		Killed:     killed,
		Took:       p.clock.Since(start),
		ExitCode:   inst.rec.ExitCode,
		Signal:     inst.rec.Signal,
	}
	if inst.stop == op {
		inst.stop = nil
	}
	p.mu.Unlock()
	close(op.done)
}

// signalGroup sends sig to the process group pgid; a group already gone is
// not an error.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
}

package demo

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// KillAgent SIGKILLs host i's agent process — only the agent: its services
// run in their own process groups and keep running, as they do when a real
// agent crashes — and waits until it is gone.
func (f *Fleet) KillAgent(i int) error {
	if i < 0 || i >= len(f.agents) {
		return fmt.Errorf("no agent %d", i)
	}
	if err := f.agents[i].Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill agent %s: %w", f.Loaded.Hosts[i].Name, err)
	}
	select {
	case <-f.exited[i]:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("agent %s survived SIGKILL for 10s", f.Loaded.Hosts[i].Name)
	}
}

// RestartAgent starts host i's agent again on its state directory (after
// KillAgent) and waits until it answers. The new agent adopts the services
// and resumes the lease the old one held.
func (f *Fleet) RestartAgent(ctx context.Context, exe string, i int) error {
	if i < 0 || i >= len(f.agents) {
		return fmt.Errorf("no agent %d", i)
	}
	select {
	case <-f.exited[i]:
	default:
		return fmt.Errorf("agent %s still runs; kill it first", f.Loaded.Hosts[i].Name)
	}
	h := f.Loaded.Hosts[i]
	if err := f.startAgent(exe, h); err != nil {
		return err
	}
	last := len(f.agents) - 1
	f.agents[i], f.exited[i] = f.agents[last], f.exited[last]
	f.agents, f.exited = f.agents[:last], f.exited[:last]
	return f.waitAgent(ctx, h)
}

// killAgentOnce SIGKILLs host i's agent once per fleet and starts it again
// down later, as an operator's restart would; a failure is kept in
// AgentKillErr for the fault's judge.
func (f *Fleet) killAgentOnce(ctx context.Context, i int, down time.Duration) {
	f.agentKillOnce.Do(func() {
		if err := f.KillAgent(i); err != nil {
			f.AgentKillErr = err
			return
		}
		select {
		case <-ctx.Done():
			f.AgentKillErr = ctx.Err()
			return
		case <-time.After(down):
		}
		if err := f.RestartAgent(ctx, f.exe, i); err != nil {
			f.AgentKillErr = err
		}
	})
}
